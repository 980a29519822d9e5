"""A to-do list on the command line, stored as JSON in the home directory."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import date
from pathlib import Path

DEFAULT_STORE = Path(os.environ.get("TODO_FILE", Path.home() / ".todo.json"))
PRIORITIES = ("low", "normal", "high")


def load(path: Path) -> list[dict[str, object]]:
    """Read the to-do items, or an empty list when there is no file yet."""
    if not path.exists():
        return []
    with path.open(encoding="utf-8") as fh:
        items = json.load(fh)
    if not isinstance(items, list):
        raise SystemExit(f"{path}: not a to-do list")
    return items


def save(path: Path, items: list[dict[str, object]]) -> None:
    """Write the items atomically."""
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(items, fh, indent=2, ensure_ascii=False)
    tmp.replace(path)


def next_id(items: list[dict[str, object]]) -> int:
    """The id for a new item."""
    ids = [int(str(item["id"])) for item in items]
    return max(ids, default=0) + 1


def cmd_add(args: argparse.Namespace, items: list[dict[str, object]]) -> int:
    """Add an item."""
    item = {
        "id": next_id(items),
        "title": " ".join(args.title),
        "priority": args.priority,
        "created": date.today().isoformat(),
        "done": False,
    }
    items.append(item)
    print(f"added #{item['id']}: {item['title']}")
    return 0


def cmd_list(args: argparse.Namespace, items: list[dict[str, object]]) -> int:
    """Print the open (or all) items, most urgent first."""
    shown = [i for i in items if args.all or not i["done"]]
    if not shown:
        print("nothing to do ✨")
        return 0
    order = {p: n for n, p in enumerate(reversed(PRIORITIES))}
    shown.sort(key=lambda i: (order[str(i["priority"])], int(str(i["id"]))))
    for item in shown:
        mark = "x" if item["done"] else " "
        print(f"[{mark}] #{item['id']:<3} {item['priority']:<6} {item['title']}")
    return 0


def cmd_done(args: argparse.Namespace, items: list[dict[str, object]]) -> int:
    """Mark an item finished."""
    for item in items:
        if item["id"] == args.id:
            item["done"] = True
            print(f"done #{args.id}")
            return 0
    print(f"no item #{args.id}", file=sys.stderr)
    return 1


def cmd_purge(args: argparse.Namespace, items: list[dict[str, object]]) -> int:
    """Drop finished items."""
    before = len(items)
    items[:] = [item for item in items if not item["done"]]
    print(f"removed {before - len(items)} finished items")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The command line of the tool."""
    parser = argparse.ArgumentParser(prog="todo", description="Keep a short to-do list.")
    parser.add_argument("--file", type=Path, default=DEFAULT_STORE)
    sub = parser.add_subparsers(dest="command", required=True)
    add = sub.add_parser("add", help="add an item")
    add.add_argument("title", nargs="+")
    add.add_argument("-p", "--priority", choices=PRIORITIES, default="normal")
    add.set_defaults(handler=cmd_add)
    lst = sub.add_parser("list", help="show open items")
    lst.add_argument("-a", "--all", action="store_true", help="include finished items")
    lst.set_defaults(handler=cmd_list)
    done = sub.add_parser("done", help="mark an item finished")
    done.add_argument("id", type=int)
    done.set_defaults(handler=cmd_done)
    purge = sub.add_parser("purge", help="drop finished items")
    purge.set_defaults(handler=cmd_purge)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the tool; return the exit status."""
    args = build_parser().parse_args(argv)
    items = load(args.file)
    code: int = args.handler(args, items)
    if code == 0 and args.command != "list":
        save(args.file, items)
    return code


if __name__ == "__main__":
    sys.exit(main())
