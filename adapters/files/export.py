"""Documents written to files under one export directory, never outside it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from domain.errors import StorageError, ValidationError
from domain.ports import DocumentExporter


class DirectoryExporter(DocumentExporter):
    """Every directory on the way is checked not to be a symbolic link (nor to resolve outside the
    export directory); the file is written beside its target and renamed over it, and an existing
    target that is a link is refused, so nothing is written through one."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def write(self, relative_path: str, text: str) -> tuple[str, int]:
        if "\x00" in relative_path:
            raise ValidationError("output_path", "output_path must not contain NUL characters")
        parts = relative_path.replace("\\", "/").split("/")
        if relative_path.startswith(("/", "\\")) or Path(relative_path).is_absolute() or ".." in parts:
            raise ValidationError("output_path", f"output_path {relative_path!r} leads outside the export directory "
                                                 "(it must be relative, without '..')")
        root = self.root.resolve()
        target = root.joinpath(*[p for p in parts if p not in ("", ".")])
        if target == root or root not in target.parents:
            raise ValidationError("output_path", f"output_path {relative_path!r} does not name a file inside the "
                                                 "export directory")
        try:
            root.mkdir(parents=True, exist_ok=True)
            here = root
            for part in target.relative_to(root).parts[:-1]:
                here = here / part
                if here.is_symlink() or (here.exists() and not here.is_dir()):
                    raise ValidationError("output_path", f"output_path {relative_path!r} goes through "
                                                         f"{'a symbolic link' if here.is_symlink() else 'a file'} "
                                                         f"({here.relative_to(root)})")
                here.mkdir(exist_ok=True)
            if target.is_symlink() or (target.exists() and not target.is_file()):
                raise ValidationError("output_path", f"output_path {relative_path!r} is a symbolic link or not a "
                                                     "regular file; refusing to write through it")
            if root not in target.parent.resolve().parents and target.parent.resolve() != root:
                raise ValidationError("output_path", f"output_path {relative_path!r} leads outside the export directory")
            data = text.encode("utf-8", "surrogatepass")
            fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".export-", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(temporary, target)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise StorageError(f"Failed to write {relative_path!r} in the export directory: {exc.strerror or exc}") from exc
        return str(target), len(data)
