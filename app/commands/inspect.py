"""`j6doctor inspect`: what each probe reads from files and folders, without a diagnosis."""

from __future__ import annotations

from pathlib import Path

from j6doctor.commands import options
from j6doctor.commands.console import Console, Refusal
from j6doctor.exit_codes import EXIT_OK


def register(commands) -> None:
    p = options.command(commands, "inspect",
                        "What each probe reads from FILE / DIR (recursively): the kind each file is recognised\n"
                        "as — by its content, or only by its name — and the data extracted, without a diagnosis.")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    p.add_argument("--format", dest="fmt", choices=["md", "json"], default="md")
    options.add_output(p, "the result")
    p.set_defaults(run=run)


def run(args, console: Console) -> int:
    from j6doctor.inspect_files import inspect_paths, render_inspect_json, render_inspect_markdown

    paths = list(args.paths)
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise Refusal(f"{missing[0]}: no such file or folder; inspect takes artifact files or folders")
    data = inspect_paths(paths, Path.cwd())
    text = render_inspect_json(data) if args.fmt == "json" else render_inspect_markdown(data)
    console.write(text, args.output, paths + [Path.cwd() / f["path"] for f in data["files"]])
    return EXIT_OK
