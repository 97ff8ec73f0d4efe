"""``esplab wireshark-plugin [--install] [--dir DIR] [--force]``: the Lua dissector for
esplab's records.

Without options it prints the path of the plugin shipped with the package (for
``tshark -X lua_script:PATH``). ``--install`` copies it into Wireshark's personal
Lua plugin folder, ``~/.local/lib/wireshark/plugins/`` (Wireshark 2.5 and later, on
Linux and macOS; ``Help > About > Folders`` names it), made if missing; ``--dir
DIR`` installs into DIR instead. An ``esplab.lua`` already there is replaced when
it is an earlier esplab plugin (its first line says so), and otherwise only with
``--force``.

Exit codes: 0 done; 2 usage errors or a folder that cannot be written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from esplab.errors import EsplabError, FileError
from esplab.exitcodes import EXIT_OK, EXIT_USAGE
from esplab.files import user_path
from esplab.wireshark_lua import PLUGIN_NAME, shipped_plugin

__all__ = ["DEFAULT_PLUGIN_DIR", "install_plugin", "main_wireshark_plugin"]

DEFAULT_PLUGIN_DIR = "~/.local/lib/wireshark/plugins"


def _ours(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            first = fh.readline()
    except OSError:
        return False
    return first.startswith(b"-- esplab's records in Wireshark")


def install_plugin(directory: str | Path, *, force: bool = False) -> Path:
    """Copy the shipped plugin into ``directory`` (made if missing); the file written.

    Raises ``EsplabError`` for a path that cannot be used and ``OSError`` when the
    folder or file cannot be written."""
    folder = user_path(directory, "plugin folder")
    if folder.exists() and not folder.is_dir():
        raise FileError(
            f"plugin folder {directory} is not a directory",
            valid="a directory (made if missing)",
        )
    target = folder / PLUGIN_NAME
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise FileError(
            f"{target} is not a regular file; esplab writes its plugin only as a plain file",
            hint="remove it, or choose another folder with --dir",
        )
    if target.exists() and not force and not _ours(target):
        raise FileError(
            f"{target} exists and is not an esplab plugin; add --force to replace it",
            hint="or choose another folder with --dir",
        )
    folder.mkdir(parents=True, exist_ok=True)
    target.write_bytes(shipped_plugin().read_bytes())
    return target


def main_wireshark_plugin(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="esplab wireshark-plugin",
        allow_abbrev=False,
        description="The Wireshark Lua dissector for esplab's records (DLT_USER 147-155: "
        "EIP-93 descriptors and SA records, the MTK tag, QDMA and AF_XDP descriptors, XFRM "
        "offload metadata), generated from the Scapy layers. Without options: print its path.",
        epilog=f"Use once: tshark -X lua_script:$(esplab wireshark-plugin) -r FILE. Or "
        f"install it: esplab wireshark-plugin --install (into {DEFAULT_PLUGIN_DIR}/).",
    )
    parser.add_argument(
        "--install",
        action="store_true",
        help=f"copy it into Wireshark's personal Lua plugin folder ({DEFAULT_PLUGIN_DIR}/)",
    )
    parser.add_argument("--dir", metavar="DIR", help="install into DIR instead (implies --install)")
    parser.add_argument(
        "--force", action="store_true", help="replace an esplab.lua there that is not esplab's"
    )
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    if not (args.install or args.dir):
        print(shipped_plugin())
        return EXIT_OK
    directory = args.dir if args.dir else DEFAULT_PLUGIN_DIR
    try:
        target = install_plugin(directory, force=args.force)
    except EsplabError as exc:
        print(f"esplab wireshark-plugin: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(
            f"esplab wireshark-plugin: cannot write {directory}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    print(f"installed {target}")
    print("Wireshark and tshark load it at start; check: tshark -G protocols | grep eip93")
    return EXIT_OK
