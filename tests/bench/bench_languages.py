"""Every core language: keystroke cost against tree-sitter, and hit ratio against OPT.

Keystroke rows type and delete a word in the middle of a generated file of
each core language (a realistic unit repeated up to 5,000 and 20,000 lines)
through the full path - ``DocumentStore.change`` with a UTF-16 range, then
``syntax_context`` - against tree-sitter's own incremental parse of the same
edit, in the same run (``bench_keystroke.keystroke_rows``).

Hit-ratio rows synthesize a session writing a realistic file of each
language (``tests/data/languages``, written for these benchmarks and not the
package's samples) and run the scope-keyed cache with the hybrid policy
against Belady's OPT on the same key stream, at small capacities where the
policies differ.

Run: ``.venv/bin/python -m tests.bench.bench_languages`` (``--quick`` for a
smoke run, ``--keystroke`` for the keystroke rows alone).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from lsp_server.documents.languages import CORE_LANGUAGES, default_registry
from lsp_server.kit.simulate import untimed as simulate
from lsp_server.kit.simulate.requests import collect_requests
from lsp_server.kit.synth.session import synthesize
from lsp_server.observe.trace.writer import write_trace
from tests.bench.bench_keystroke import keystroke_rows
from tests.bench.rows import row

DATA = Path(__file__).resolve().parents[1] / "data" / "languages"

#: one realistic unit per core language; ``@N`` is replaced by the copy's number.
#: The typing position is the end of the line that strips to ``CURSOR[language]``.
UNITS: dict[str, tuple[str, str, str]] = {
    "javascript": ("js", "let result = 0;", '''
class Inventory@N {
  constructor(owner) {
    this.owner = owner;
    this.items = new Map();
  }

  add(name, count = 1) {
    if (count <= 0) {
      throw new RangeError(`count must be positive, got ${count}`);
    }
    this.items.set(name, (this.items.get(name) || 0) + count);
    return this.items.get(name);
  }

  total() {
    let result = 0;
    for (const [, count] of this.items) {
      result += count;
    }
    return result;
  }
}

const loadInventory@N = (rows) => {
  const inv = new Inventory@N("loader");
  rows.forEach(([name, count]) => inv.add(name, count));
  return inv;
};
'''),
    "typescript": ("ts", "let result = 0;", '''
export class Inventory@N {
  private items = new Map<string, number>();

  constructor(private readonly owner: string) {}

  add(name: string, count: number = 1): number {
    if (count <= 0) {
      throw new RangeError(`count must be positive, got ${count}`);
    }
    this.items.set(name, (this.items.get(name) ?? 0) + count);
    return this.items.get(name)!;
  }

  total(): number {
    let result = 0;
    for (const count of this.items.values()) {
      result += count;
    }
    return result;
  }
}

export function loadInventory@N(rows: Array<[string, number]>): Inventory@N {
  const inv = new Inventory@N("loader");
  for (const [name, count] of rows) {
    inv.add(name, count);
  }
  return inv;
}
'''),
    "go": ("go", "result := 0", '''
type Inventory@N struct {
	owner string
	items map[string]int
}

func (inv *Inventory@N) Add(name string, count int) (int, error) {
	if count <= 0 {
		return 0, fmt.Errorf("count must be positive, got %d", count)
	}
	inv.items[name] += count
	return inv.items[name], nil
}

func (inv *Inventory@N) Total() int {
	result := 0
	for _, count := range inv.items {
		result += count
	}
	return result
}

func LoadInventory@N(rows map[string]int) *Inventory@N {
	inv := &Inventory@N{owner: "loader", items: map[string]int{}}
	for name, count := range rows {
		inv.Add(name, count)
	}
	return inv
}
'''),
    "rust": ("rs", "let mut result = 0;", '''
pub struct Inventory@N {
    owner: String,
    items: HashMap<String, u32>,
}

impl Inventory@N {
    pub fn add(&mut self, name: &str, count: u32) -> Result<u32, String> {
        if count == 0 {
            return Err(format!("count must be positive, got {}", count));
        }
        let entry = self.items.entry(name.to_string()).or_insert(0);
        *entry += count;
        Ok(*entry)
    }

    pub fn total(&self) -> u32 {
        let mut result = 0;
        for count in self.items.values() {
            result += count;
        }
        result
    }
}

pub fn load_inventory@N(rows: &[(&str, u32)]) -> Inventory@N {
    let mut inv = Inventory@N { owner: "loader".into(), items: HashMap::new() };
    for (name, count) in rows {
        let _ = inv.add(name, *count);
    }
    inv
}
'''),
    "java": ("java", "int result = 0;", '''
class Inventory@N {
    private final String owner;
    private final Map<String, Integer> items = new HashMap<>();

    Inventory@N(String owner) {
        this.owner = owner;
    }

    int add(String name, int count) {
        if (count <= 0) {
            throw new IllegalArgumentException("count must be positive, got " + count);
        }
        items.merge(name, count, Integer::sum);
        return items.get(name);
    }

    int total() {
        int result = 0;
        for (int count : items.values()) {
            result += count;
        }
        return result;
    }

    static Inventory@N load(Map<String, Integer> rows) {
        Inventory@N inv = new Inventory@N("loader");
        rows.forEach(inv::add);
        return inv;
    }
}
'''),
    "c": ("c", "int result = 0;", '''
struct inventory@N {
    const char *owner;
    int counts[64];
    int used;
};

int inventory@N_add(struct inventory@N *inv, int slot, int count) {
    if (count <= 0 || slot < 0 || slot >= 64) {
        return -1;
    }
    inv->counts[slot] += count;
    if (slot >= inv->used) {
        inv->used = slot + 1;
    }
    return inv->counts[slot];
}

int inventory@N_total(const struct inventory@N *inv) {
    int result = 0;
    for (int i = 0; i < inv->used; i++) {
        result += inv->counts[i];
    }
    return result;
}
'''),
    "cpp": ("cpp", "int result = 0;", '''
class Inventory@N {
public:
    explicit Inventory@N(std::string owner) : owner_(std::move(owner)) {}

    int add(const std::string& name, int count = 1) {
        if (count <= 0) {
            throw std::invalid_argument("count must be positive");
        }
        items_[name] += count;
        return items_[name];
    }

    int total() const {
        int result = 0;
        for (const auto& [name, count] : items_) {
            result += count;
        }
        return result;
    }

private:
    std::string owner_;
    std::map<std::string, int> items_;
};
'''),
}

#: capacities where the hit-ratio rows compare hybrid with OPT
CAPACITIES = (16, 64)


def source(language: str, lines: int) -> str:
    """Realistic code of ``language``, at least ``lines`` lines long."""
    unit = UNITS[language][2]
    parts: list[str] = []
    count = n = 0
    while count < lines:
        part = unit.replace("@N", str(n))
        parts.append(part)
        count += part.count("\n")
        n += 1
    return "".join(parts)


def data_file(language: str) -> Path:
    """The realistic file of ``language`` in tests/data/languages."""
    registry = default_registry()
    spec = registry.for_language_id(language)
    found = [p for p in sorted(DATA.iterdir()) if registry.for_uri(p.name) is spec]
    if not found:
        raise FileNotFoundError(f"no {language} file in {DATA}")
    return found[0]


def hit_ratio_rows(language: str, quick: bool) -> list[dict[str, object]]:
    """Hybrid's hit ratio against OPT on a synthesized session over the language's file."""
    path = data_file(language)
    text = path.read_text(encoding="utf-8")
    if quick:
        text = "\n".join(text.split("\n")[:40]) + "\n"
    trace = synthesize({path.resolve().as_uri(): text}, seed=7)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "session.jsonl"
        write_trace(out, trace)
        requests = collect_requests(out)
    results = simulate.simulate(requests, policies=["hybrid", "opt"], capacities=CAPACITIES)
    by = {(r.policy, r.capacity): r for r in results}
    rows: list[dict[str, object]] = []
    for cap in CAPACITIES:
        hybrid, opt = by[("hybrid", cap)], by[("opt", cap)]
        ours, best = hybrid.hits / hybrid.requests, opt.hits / opt.requests
        name = (
            f"{language} hit ratio hybrid vs opt (cap {cap}, {hybrid.requests} req,"
            f" {hybrid.stale} stale)"
        )
        rows.append(row(name, ours, best, "hit ratio"))
    return rows


def run(quick: bool = False, hit_ratio: bool = True) -> list[dict[str, object]]:
    """Keystroke and (unless ``hit_ratio`` is False) hit-ratio rows for every core language."""
    sizes = (500, 2_000) if quick else (5_000, 20_000)
    repeats = 3 if quick else 31
    rows: list[dict[str, object]] = []
    for language in CORE_LANGUAGES:
        if language not in UNITS:
            continue
        ext, cursor, _ = UNITS[language]
        for lines in sizes:
            text = source(language, lines)
            (made,) = keystroke_rows(
                text, f"file:///bench/large.{ext}", language, cursor, repeats, lines,
                keystroke_only=True,
            )
            rows.append({**made, "name": f"{language} {made['name']}"})
        if hit_ratio:
            rows.extend(hit_ratio_rows(language, quick))
    return rows


def main() -> None:
    """Print the rows as a table."""
    for made in run(quick="--quick" in sys.argv, hit_ratio="--keystroke" not in sys.argv):
        print(
            f"{made['name']:72} {made['value']:>9} {made['baseline']:>9} {made['ratio']:>7}"
            f" {made['unit']}"
        )


if __name__ == "__main__":
    main()
