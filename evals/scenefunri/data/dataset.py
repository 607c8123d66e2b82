"""SceneFunRI datasets: a folder with ``instances.jsonl`` and the images it names.

Each line: ``{"id": str, "image": "<path relative to the folder>", "instruction": str,
"box": [x1, y1, x2, y2], "meta": {...}}`` with the box in pixels of the original image;
width and height come from the image file. An image must lie inside the folder once symlinks
are followed, unless ``allow_outside_images``: a dataset must not get a provider sent any file
it can name (``../``, an absolute path, a symlink out).
"""

from __future__ import annotations

import errno
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from ....engine.box import Box, BoxError
from ....engine.decoded import check_decodes
from ....engine.errors import UnseenError
from ....engine.images import ImageError, file_digest, format_problem, inside, open_image
from ....engine.types import Instance
from ....engine.userfiles import iter_lines

INSTANCES_FILE = "instances.jsonl"


class DatasetError(UnseenError, ValueError):
    """A dataset that cannot be used; the message names the file, the line and why."""


@dataclass
class Dataset:
    root: Path
    instances: list[Instance]
    fingerprint: str
    name: str = field(default="scenefunri")

    def __len__(self) -> int:
        return len(self.instances)

    def __iter__(self):
        return iter(self.instances)


def _line_error(path: Path, lineno: int, why: str) -> DatasetError:
    return DatasetError(f"{path}:{lineno}: {why}")


def _parse(raw: str) -> tuple[object, str | None]:
    """The line's JSON, or why it is none."""
    try:
        return json.loads(raw), None
    except json.JSONDecodeError as exc:
        return None, f"bad JSON ({exc.msg} at column {exc.colno})"
    except RecursionError:
        return None, "bad JSON (nested too deeply)"
    except ValueError as exc:  # an integer past the interpreter's 4,300 digits
        return None, f"bad JSON (a number too long to read: {exc})".split(";")[0] + ")"


def _not_text(value: object, where: str = "") -> str | None:
    """Where ``value`` holds a string that cannot be written as UTF-8 (a lone surrogate)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return (f"{where or 'a string'} holds a lone surrogate "
                    f"(\\u{ord(value[exc.start]):04x}), not text")
    elif isinstance(value, dict):
        for k, v in value.items():
            if found := _not_text(k, where) or _not_text(v, f"{where}.{k}" if where else k):
                return found
    elif isinstance(value, list):
        for v in value:
            if found := _not_text(v, where):
                return found
    return None


def _image_path(root: Path, name: str) -> tuple[Path | None, str | None]:
    """The image's resolved path, or why it has none."""
    if "\x00" in name:
        return None, f"image path {name!r} holds a NUL byte"
    longest = max((len(part.encode("utf-8")) for part in Path(name).parts), default=0)
    if longest > 255:  # NAME_MAX of every common file system
        return None, (f"image name too long ({len(name):,} characters; a file name holds at "
                      "most 255 bytes)")
    try:
        return (root / name).resolve(), None
    except (OSError, RuntimeError) as exc:  # RuntimeError: Python 3.11's symlink loop
        why = "a symlink loop" if "loop" in str(exc).lower() or getattr(
            exc, "errno", None) == errno.ELOOP else str(exc)
        return None, f"image {name} cannot be resolved ({why})"


def _box(value: list) -> str | None:
    """Why ``value`` is no box of four numbers, or None."""
    if len(value) != 4 or not all(isinstance(v, int | float) and not isinstance(v, bool)
                                  for v in value):
        return "a box is four numbers [x1, y1, x2, y2]"
    return None


def _instance(root: Path, path: Path, lineno: int, raw: str,
              allow_outside_images: bool = False) -> Instance:
    obj, why = _parse(raw)
    if why is not None:
        raise _line_error(path, lineno, why)
    if not isinstance(obj, dict):
        raise _line_error(path, lineno, "a line must be a JSON object")
    for key, kind in (("id", str), ("image", str), ("instruction", str), ("box", list)):
        if key not in obj:
            raise _line_error(path, lineno, f"missing field {key!r}")
        if not isinstance(obj[key], kind):
            raise _line_error(path, lineno, f"field {key!r} must be a {kind.__name__}")
    for key in ("id", "instruction"):
        if not obj[key].strip():
            raise _line_error(path, lineno, f"field {key!r} is empty")
    try:
        why = _not_text(obj)
    except RecursionError:
        why = "meta is nested too deeply"
    if why:
        raise _line_error(path, lineno, f"field {why}")
    image, why = _image_path(root, obj["image"])
    if why is not None or image is None:
        raise _line_error(path, lineno, why or "no image")
    if not allow_outside_images and not inside(root, image):
        raise _line_error(path, lineno, f"image {obj['image']} lies outside the dataset folder "
                          f"{root} (--allow-outside-images permits it)")
    if not image.is_file():
        raise _line_error(path, lineno, f"image not found: {obj['image']}")
    try:
        with open_image(image) as im:
            width, height = im.size
            if why := format_problem(image, im.format):
                raise ImageError(image, why)
    except ImageError as exc:
        raise _line_error(path, lineno, f"unreadable image {obj['image']}: {exc.reason}") from None
    try:
        if why := _box(obj["box"]):
            raise BoxError(why)
        box = Box.of(obj["box"])
    except BoxError as exc:
        raise _line_error(path, lineno, f"bad box {obj['box']}: {exc}") from None
    if not box.inside(width, height):
        raise _line_error(
            path, lineno, f"box {obj['box']} lies outside the {width}x{height} image"
        )
    meta = obj.get("meta") or {}
    if not isinstance(meta, dict):
        raise _line_error(path, lineno, "field 'meta' must be an object")
    return Instance(
        id=obj["id"], image=str(image), width=width, height=height,
        text={"instruction": obj["instruction"]}, truth={"box": box.to_list()}, meta=meta,
    )


def load_dataset(path: str | Path, allow_outside_images: bool = False) -> Dataset:
    """Load and validate every line; raise DatasetError at the first bad one."""
    path = Path(path)
    file = path / INSTANCES_FILE if path.is_dir() else path
    if not file.is_file():
        raise DatasetError(f"{file}: not found (a dataset is a folder with {INSTANCES_FILE})")
    root = file.parent
    instances: list[Instance] = []
    seen: dict[str, int] = {}
    digest = hashlib.sha256()
    for lineno, raw in iter_lines(file):
        if not raw.strip():
            continue
        inst = _instance(root, file, lineno, raw, allow_outside_images)
        if inst.id in seen:
            raise _line_error(file, lineno, f"duplicate id {inst.id!r} (first on line {seen[inst.id]})")
        seen[inst.id] = lineno
        image_digest = file_digest(inst.image)
        try:  # once per image: a rerun finds its digest among those that decoded
            check_decodes(inst.image, image_digest)
        except ImageError as exc:
            raise _line_error(file, lineno, f"unreadable image {inst.image}: "
                              f"{exc.reason}") from None
        digest.update(raw.strip().encode())
        digest.update(image_digest.encode())
        instances.append(inst)
    if not instances:
        raise DatasetError(f"{file}: no instances")
    return Dataset(root=root, instances=instances, fingerprint=digest.hexdigest()[:16])


def find_instance(path: str | Path, instance_id: str,
                  allow_outside_images: bool = False) -> Instance:
    """One instance by id, validating only its line and opening only its image (no
    fingerprint): for viewers, which must not hash a whole data set to show one item."""
    path = Path(path)
    file = path / INSTANCES_FILE if path.is_dir() else path
    if not file.is_file():
        raise DatasetError(f"{file}: not found (a dataset is a folder with {INSTANCES_FILE})")
    needle = json.dumps(instance_id)
    for lineno, raw in iter_lines(file):
        # cheap pre-filter before parsing: the id must appear as a JSON string
        if needle not in raw:
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError:
            continue  # not this instance's line (the id appeared inside bad JSON)
        if isinstance(obj, dict) and obj.get("id") == instance_id:
            return _instance(file.parent, file, lineno, raw, allow_outside_images)
    raise DatasetError(f"{file}: no instance {instance_id!r}")
