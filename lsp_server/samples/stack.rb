# A stack with a size limit.
module Collections
  class Stack
    def initialize(limit)
      @items = []
      @limit = limit
    end

    def push(item)
      if @items.size >= @limit
        raise ArgumentError, "full"
      end
      @items.push(item)
    end

    def pop
      return nil if @items.empty?
      @items.pop
    end

    def each_item
      @items.each do |item|
        yield item
      end
    end
  end

  def self.double(n)
    total = n + n
    total
  end

  def self.triple(n)
    total = n + n + n
    total
  end
end
