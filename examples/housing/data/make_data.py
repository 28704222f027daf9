"""Generate the synthetic housing data set of the example, deterministically.

Run ``python make_data.py`` to rewrite ``housing.csv`` byte for byte (seeded; stdlib only, so
the example needs no download and no numpy to be regenerated). The price follows a known
formula with an interaction between size and neighbourhood and a non-linear age effect, so a
linear model on raw columns misses what a model with engineered features finds.
"""

from __future__ import annotations

import csv
import math
import random
from pathlib import Path

SEED = 20_261_122
ROWS = 1_500
NEIGHBORHOODS = {
    "Riverside": 1.35,
    "Old Town": 1.15,
    "Midtown": 1.0,
    "Eastgate": 0.85,
    "Airport": 0.7,
}
CONDITIONS = ["poor", "fair", "good", "excellent"]


def make_rows(rng: random.Random) -> list[dict[str, object]]:
    """The rows, including a few duplicates, missing values and outliers to clean."""
    rows: list[dict[str, object]] = []
    for index in range(ROWS):
        hood = rng.choice(list(NEIGHBORHOODS))
        quality = NEIGHBORHOODS[hood]
        sqft = round(rng.lognormvariate(7.35, 0.32))
        bedrooms = max(1, min(6, round(sqft / 550 + rng.gauss(0, 0.6))))
        bathrooms = max(1.0, min(4.5, round((bedrooms * 0.6 + rng.gauss(0, 0.4)) * 2) / 2))
        year_built = rng.randint(1920, 2022)
        age = 2026 - year_built
        lot_size = round(rng.lognormvariate(8.6, 0.45))
        garage = rng.choice([0, 1, 1, 2, 2, 3])
        condition = rng.choices(CONDITIONS, weights=[1, 3, 5, 2])[0]
        distance = round(rng.uniform(0.5, 30.0), 1)
        price = (
            35_000
            + 150 * sqft * quality
            + 9_000 * bathrooms
            + 6_000 * garage
            + 4 * lot_size
            - 55 * (age - 45) ** 2 / 10
            + 12_000 * CONDITIONS.index(condition)
            - 2_200 * distance
            + rng.gauss(0, 14_000)
        )
        rows.append(
            {
                "house_id": f"H{index:05d}",
                "neighborhood": hood,
                "sqft": sqft,
                "bedrooms": bedrooms,
                "bathrooms": bathrooms,
                "year_built": year_built,
                "lot_size": lot_size,
                "garage_spaces": garage,
                "condition": condition,
                "distance_to_center_km": distance,
                "price": int(round(max(price, 40_000), -2)),
            }
        )
    for row in rng.sample(rows, 30):
        row[rng.choice(["lot_size", "garage_spaces", "bathrooms"])] = ""
    for row in rng.sample(rows, 4):
        row["sqft"] = int(row["sqft"]) * 10  # type: ignore[call-overload]
    rows.extend(dict(row) for row in rng.sample(rows, 12))
    rng.shuffle(rows)
    return rows


def main() -> None:
    """Write ``housing.csv`` next to this script."""
    rows = make_rows(random.Random(SEED))
    target = Path(__file__).with_name("housing.csv")
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {len(rows)} rows to {target} ({math.ceil(target.stat().st_size / 1024)} KB)")


if __name__ == "__main__":
    main()
