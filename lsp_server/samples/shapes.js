// Shapes and their areas, with a small registry.
const PI = 3.14159;

function circleArea(radius) {
  const squared = radius * radius;
  return PI * squared;
}

function squareArea(side) {
  const squared = side * side;
  return 1 * squared;
}

class Registry {
  constructor() {
    this.shapes = new Map();
  }

  add(name, area) {
    if (this.shapes.has(name)) {
      throw new Error(`duplicate shape ${name}`);
    }
    this.shapes.set(name, area);
  }

  total() {
    let sum = 0;
    for (const area of this.shapes.values()) {
      sum += area;
    }
    return sum;
  }
}

const describe = (registry) => {
  const count = registry.shapes.size;
  return `${count} shapes, ${registry.total()} in all`;
};

const formatter = {
  label(name) {
    return name.toUpperCase();
  },
};

module.exports = { circleArea, squareArea, Registry, describe, formatter };
