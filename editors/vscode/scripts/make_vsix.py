#!/usr/bin/env python3
"""Package the built extension (dist/, media/, package.json, README.md) as a .vsix without vsce."""

from __future__ import annotations

import argparse
import json
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parent.parent
INCLUDE = ("package.json", "README.md", "LICENSE")
INCLUDE_DIRS = ("dist", "media")

CONTENT_TYPES = """<?xml version="1.0" encoding="utf-8"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension=".json" ContentType="application/json"/>
<Default Extension=".js" ContentType="application/javascript"/>
<Default Extension=".css" ContentType="text/css"/>
<Default Extension=".svg" ContentType="image/svg+xml"/>
<Default Extension=".md" ContentType="text/markdown"/>
<Default Extension=".vsixmanifest" ContentType="text/xml"/>
</Types>
"""


def manifest(pkg: dict) -> str:
    """The extension.vsixmanifest VS Code reads next to extension/package.json."""
    return f"""<?xml version="1.0" encoding="utf-8"?>
<PackageManifest Version="2.0.0" xmlns="http://schemas.microsoft.com/developer/vsx-schema/2011" xmlns:d="http://schemas.microsoft.com/developer/vsx-schema-design/2011">
<Metadata>
<Identity Language="en-US" Id="{escape(pkg["name"])}" Version="{escape(pkg["version"])}" Publisher="{escape(pkg["publisher"])}"/>
<DisplayName>{escape(pkg.get("displayName", pkg["name"]))}</DisplayName>
<Description xml:space="preserve">{escape(pkg.get("description", ""))}</Description>
<Categories>{escape(",".join(pkg.get("categories", [])))}</Categories>
<GalleryFlags>Public</GalleryFlags>
<Properties>
<Property Id="Microsoft.VisualStudio.Code.Engine" Value="{escape(pkg["engines"]["vscode"])}"/>
<Property Id="Microsoft.VisualStudio.Code.ExtensionKind" Value="workspace"/>
</Properties>
</Metadata>
<Installation><InstallationTarget Id="Microsoft.VisualStudio.Code"/></Installation>
<Dependencies/>
<Assets><Asset Type="Microsoft.VisualStudio.Code.Manifest" Path="extension/package.json" Addressable="true"/></Assets>
</PackageManifest>
"""


def files_to_pack() -> list[Path]:
    """The extension's runtime files, relative to its root; source maps stay out."""
    files = [ROOT / name for name in INCLUDE if (ROOT / name).is_file()]
    for folder in INCLUDE_DIRS:
        files += sorted(p for p in (ROOT / folder).rglob("*") if p.is_file() and not p.name.endswith(".map"))
    return files


def main() -> None:
    """Write ollie-<version>.vsix (or --out)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, help="where to write the .vsix")
    args = parser.parse_args()
    pkg = json.loads((ROOT / "package.json").read_text())
    if not (ROOT / "dist" / "extension.js").is_file():
        parser.error("dist/extension.js is missing: run `npm run build` first")
    out = args.out or ROOT / f"{pkg['name']}-{pkg['version']}.vsix"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as vsix:
        vsix.writestr("[Content_Types].xml", CONTENT_TYPES)
        vsix.writestr("extension.vsixmanifest", manifest(pkg))
        for path in files_to_pack():
            vsix.write(path, "extension/" + path.relative_to(ROOT).as_posix())
    print(out)


if __name__ == "__main__":
    main()
