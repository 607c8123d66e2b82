"""Draw docs/sample-set.png: four instances of the bundled sample set, each at 3/4 size under
its instruction, with the hidden target's box in green.

    python docs/sample_set_png.py [ID ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from unseen.evals.scenefunri import load_dataset
from unseen.evals.scenefunri.data.sample import bundled_sample

# targets in four different parts of the image, four kinds of part: (visit, instruction)
DEFAULT = (("100003-", "Unplug the charger of the phone on the nightstand"),
           ("100001-", "Turn up the heating on the radiator under the window"),
           ("100005-", "Pull out the lowest drawer of the dresser"),
           ("100003-", "Open the wardrobe's right door"))
SCALE, TITLE_H, GREEN = 0.75, 17, (20, 220, 20)


def main(ids: list[str]) -> None:
    ds = load_dataset(bundled_sample())
    if ids:
        chosen = [next(i for i in ds.instances if i.id == x) for x in ids]
    else:
        chosen = [next(i for i in ds.instances if i.id.startswith(v)
                       and i.text["instruction"] == text) for v, text in DEFAULT]
    w, h = int(640 * SCALE), int(480 * SCALE)
    sheet = Image.new("RGB", (2 * w, 2 * h), "white")
    font = ImageFont.load_default()
    for k, inst in enumerate(chosen):
        x0, y0 = (k % 2) * w, (k // 2) * h
        with Image.open(inst.image) as im:
            img = im.convert("RGB").resize((w, h - TITLE_H), Image.LANCZOS)
        sx, sy = w / inst.width, (h - TITLE_H) / inst.height
        draw = ImageDraw.Draw(img)
        b = inst.truth["box"]
        draw.rectangle([b[0] * sx - 2, b[1] * sy - 2, b[2] * sx + 2, b[3] * sy + 2], outline=GREEN,
                       width=2)
        sheet.paste(img, (x0, y0 + TITLE_H))
        ImageDraw.Draw(sheet).text((x0 + 4, y0 + 3), inst.text["instruction"], fill="black",
                                   font=font)
    out = Path(__file__).with_name("sample-set.png")
    sheet.save(out, optimize=True)
    print(f"wrote {out}: {', '.join(i.id for i in chosen)}")


if __name__ == "__main__":
    main(sys.argv[1:])
