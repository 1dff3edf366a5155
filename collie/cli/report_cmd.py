"""``collie report``: a campaign folder as HTML, Markdown, CSV, JSON or JUnit XML, or two campaigns compared."""

from __future__ import annotations

from pathlib import Path

import click

from collie.cli.run_cmd import output_path
from collie.errors import InputError
from collie.report import FORMATS
from collie.storage.files import write_atomic


def _format_of(fmt: str | None, out: Path | None) -> str:
    """The format asked for, else the one ``-o``'s suffix names, else Markdown."""
    if fmt is not None:
        return fmt
    if out is not None:
        for name, suffix in FORMATS.items():
            if out.suffix.lower() == suffix or (name == "md" and out.suffix.lower() == ".markdown"):
                return name
    return "md"


def write_output(text: str, out: Path | None) -> None:
    """Write ``text`` to ``out`` (atomically, with the umask's permissions: see
    :func:`~collie.storage.files.write_atomic`) or to stdout.

    Raises:
        InputError: ``out`` is a folder, or its folder does not exist or cannot be written.
    """
    if out is None:
        click.echo(text, nl=not text.endswith("\n"))
        return
    if out.is_dir():
        raise InputError(f"-o {out} is a folder; give a file name, e.g. -o {out / 'report.html'}")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"-o {out}: the folder {parent} does not exist; create it or write elsewhere")
    try:
        write_atomic(out, text)
    except OSError as exc:
        raise InputError(f"-o {out}: cannot be written in {parent} ({exc.strerror or exc}); write elsewhere") from None


@click.command()
@click.argument("folder", required=False, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(list(FORMATS)), default=None,
              help="Report format (default: from -o's suffix, else md).")
@click.option("-o", "--output", "out", callback=output_path, default=None,
              help="Write the report to this file (default: stdout).")
@click.option("--compare", nargs=2, type=click.Path(path_type=Path), default=None, metavar="OLD_DIR NEW_DIR",
              help="Compare two campaigns (e.g. firmware A, then B): new, fixed and still-present anomalies; two "
                   "imports of one tool row by row; or a perftest import beside a campaign (either order) that ran "
                   "its workloads (collie import rerun).")
def report(folder: Path | None, fmt: str | None, out: Path | None, compare: tuple[Path, Path] | None) -> None:
    """Report on a campaign folder: its trials, and a card per anomaly with the evidence from both hosts, the
    minimal case, its replay command and perftest lines. On an import folder (collie import), its measured rows
    (html, md, csv or json). --compare an import folder and a campaign folder (collie import rerun), in either
    order: each imported row's figure beside collie's runs of the same workload (md or json).

    \b
    Formats:
      html   one self-contained page with plots (open it in any browser; it loads nothing)
      md     a vendor bug report: environment, minimal cases, MFS, counters, replay commands
      csv    one row per trial (the journal as a table)
      json   everything, in a versioned schema (docs/reports.md)
      junit  one failed test case per anomaly, for CI
    """
    chosen = _format_of(fmt, out)
    if compare is not None:
        if folder is not None:
            raise InputError(f"give either a campaign folder or --compare OLD_DIR NEW_DIR, not both (got {folder})")
        from collie.storage.imports import is_import_folder

        imports = [is_import_folder(p) for p in compare]
        if any(imports):
            _compare_imports(compare, imports, chosen, out)
            return
        from collie.report.compare import COMPARE_FORMATS, build_comparison, render_comparison

        if chosen not in COMPARE_FORMATS:
            raise InputError(f"--compare writes {', '.join(COMPARE_FORMATS)}, not --format {chosen}")
        write_output(render_comparison(build_comparison(*compare), chosen), out)
        return
    if folder is None:
        raise InputError("give the campaign folder to report on (collie report DIR), or --compare OLD_DIR NEW_DIR")
    from collie.storage.imports import is_import_folder

    if is_import_folder(folder):
        _report_import(folder, chosen, out)
        return
    from collie.report import build_report, render

    built = build_report(folder)
    text = render(built, chosen)
    write_output(text, out)
    for w in built.data.warnings:
        click.echo(f"warning: {w}", err=True)
    if out is not None:
        click.echo(f"wrote the {chosen} report of {folder} to {out}", err=True)


def _report_import(folder: Path, fmt: str, out: Path | None) -> None:
    """The report of an import folder (``collie import``): its rows in Markdown, CSV or JSON."""
    from collie.report.imports import IMPORT_FORMATS, render_import
    from collie.storage.imports import read_import

    if fmt not in IMPORT_FORMATS:
        raise InputError(f"{folder} is an import folder: its report is written as {', '.join(IMPORT_FORMATS)}, "
                         f"not --format {fmt}")
    imported = read_import(folder)
    write_output(render_import(imported, fmt), out)
    for w in imported.warnings:
        click.echo(f"warning: {w}", err=True)
    if out is not None:
        click.echo(f"wrote the {fmt} report of {folder} to {out}", err=True)


def _compare_imports(folders: tuple[Path, Path], imports: list[bool], fmt: str, out: Path | None) -> None:
    """Two import folders side by side (``--compare`` when either is one)."""
    from collie.report.imports import compare_imports, render_import_comparison
    from collie.storage.imports import read_import

    if not all(imports):
        _import_beside_campaign(folders, imports, fmt, out)
        return
    if fmt not in ("md", "json"):
        raise InputError(f"--compare of two import folders writes md or json, not --format {fmt}")
    old, new = (read_import(p) for p in folders)
    write_output(render_import_comparison(compare_imports(old, new), fmt), out)


def _import_beside_campaign(folders: tuple[Path, Path], imports: list[bool], fmt: str, out: Path | None) -> None:
    """A perftest import beside a campaign (``--compare`` of one of each, either order)."""
    from collie.report.beside import BESIDE_FORMATS, compare_beside, render_beside
    from collie.report.load import load_campaign
    from collie.storage.imports import read_import

    imported_dir, campaign_dir = (folders[0], folders[1]) if imports[0] else (folders[1], folders[0])
    from collie.storage.campaign import CONFIG

    if not campaign_dir.exists():
        raise InputError(f"{campaign_dir} does not exist; --compare takes two import folders, two campaign folders, "
                         "or an import folder and a campaign folder")
    if not (campaign_dir / CONFIG).is_file():
        raise InputError(f"{campaign_dir} is not an import folder nor a campaign folder (it holds neither import.json "
                         "nor campaign.toml); --compare sets an import beside another import of the same tool, or "
                         "beside a campaign that ran its workloads (collie import rerun)")
    if fmt not in BESIDE_FORMATS:
        raise InputError(f"--compare of an import and a campaign writes {', '.join(BESIDE_FORMATS)}, not --format "
                         f"{fmt}")
    imported = read_import(imported_dir)
    campaign = load_campaign(campaign_dir)
    compared = compare_beside(imported, campaign)
    write_output(render_beside(compared, fmt), out)
    for w in campaign.warnings:
        click.echo(f"warning: {w}", err=True)
    if not compared["matched"]:
        click.echo(f"collie: 0 rows matched: {compared['hint']}", err=True)
