"""Build the shipped catalogue and goals (deterministic: fixed seed, no network).

    python scripts/build_catalog.py            # writes src/autorl_task_webshop/data/*.json
    python scripts/build_catalog.py --check    # fails when the shipped files differ

1,000 products over 10 categories (3 product types each) with attributes, option groups and
prices; one goal per target product, instructions in the style of WebShop's human instructions
("i need non slip running shoes in blue color and size 9, and price lower than 60.00 dollars").
Eval targets (100) and train targets (500) are disjoint products, and no eval goal has the same
(type, attributes, options) as a train goal. The other 400 products are distractors.
Price bounds follow the reference: the upper of two of the next four multiples of ten above the
product's price.
"""

from __future__ import annotations

import argparse
import random
import string
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from autorl_task_webshop.catalog import SEP, Goal, Product, dump_json  # noqa: E402

SEED = 20240611
N_PRODUCTS_PER_CATEGORY = 100
N_EVAL = 100
N_TRAIN = 500
DATA_DIR = ROOT / "src" / "autorl_task_webshop" / "data"

COLORS = [
    "black", "white", "navy blue", "grey", "red", "green", "beige", "pink", "brown", "purple",
    "olive", "light blue",
]  # fmt: skip

# category: (breadcrumb root, types, brands, attribute pool, option groups, price range)
CATEGORIES: dict[str, dict] = {
    "shoes": {
        "root": "Clothing, Shoes & Jewelry > Shoes",
        "types": ["running shoes", "hiking boots", "slippers"],
        "brands": ["Trailpeak", "Stridex", "Moxo", "Urbanfeet", "Kestrel", "Nordwalk"],
        "attributes": [
            "non slip",
            "rubber sole",
            "memory foam",
            "water resistant",
            "lightweight",
            "breathable mesh",
            "arch support",
            "wide width",
            "slip on",
            "cushioned insole",
        ],
        "options": {
            "size": ["6", "6.5", "7", "7.5", "8", "8.5", "9", "9.5", "10", "11", "12"],
            "color": COLORS,
        },
        "price": (18.0, 140.0),
    },
    "clothing": {
        "root": "Clothing, Shoes & Jewelry > Clothing",
        "types": ["t-shirt", "hoodie", "jogger pants"],
        "brands": ["Loomwell", "Cottonfield", "Ardent", "Basix", "Northline", "Velora"],
        "attributes": [
            "machine wash",
            "cotton",
            "relaxed fit",
            "moisture wicking",
            "long sleeve",
            "short sleeve",
            "fleece lined",
            "quick dry",
            "drawstring closure",
            "button closure",
        ],
        "options": {
            "size": ["x-small", "small", "medium", "large", "x-large", "xx-large"],
            "color": COLORS,
        },
        "price": (9.0, 70.0),
    },
    "beauty": {
        "root": "Beauty & Personal Care > Skin & Hair Care",
        "types": ["shampoo", "face moisturizer", "lip balm"],
        "brands": ["Puraleaf", "Dermaglow", "Oceanmist", "Botanica", "Silkroot", "Verdana"],
        "attributes": [
            "paraben free",
            "sulfate free",
            "cruelty free",
            "natural ingredients",
            "dry skin",
            "sensitive skin",
            "fragrance free",
            "long lasting",
            "vitamin e",
            "hyaluronic acid",
        ],
        "options": {
            "size": ["0.5 ounce", "1.7 fl oz", "3.4 fl oz", "8 fl oz", "16 fl oz"],
            "scent": ["lavender", "coconut", "unscented", "citrus", "mint", "vanilla", "rose"],
        },
        "price": (4.0, 48.0),
    },
    "grocery": {
        "root": "Grocery & Gourmet Food > Snacks & Beverages",
        "types": ["coffee beans", "granola bars", "herbal tea"],
        "brands": ["Hillcrest", "Morningside", "Goldcrop", "Tealeaf & Co", "Nutwise", "Sunvale"],
        "attributes": [
            "gluten free",
            "non gmo",
            "organic",
            "low sugar",
            "caffeine free",
            "high protein",
            "keto friendly",
            "individually wrapped",
            "kosher",
            "vegan",
        ],
        "options": {
            "flavor": [
                "original",
                "dark roast",
                "chocolate",
                "peanut butter",
                "honey",
                "chamomile",
                "vanilla almond",
            ],
            "size": ["pack of 1", "pack of 2", "pack of 6", "pack of 12"],
        },
        "price": (5.0, 60.0),
    },
    "electronics": {
        "root": "Electronics > Accessories",
        "types": ["wireless earbuds", "phone case", "usb c charger"],
        "brands": ["Voltix", "Sonique", "Armorly", "Zentech", "Chargex", "Lumio"],
        "attributes": [
            "fast charging",
            "noise cancelling",
            "bluetooth 5.3",
            "water resistant",
            "shockproof",
            "wireless charging compatible",
            "long battery life",
            "compact design",
            "built in microphone",
            "scratch resistant",
        ],
        "options": {"color": COLORS[:8]},
        "price": (8.0, 160.0),
    },
    "home": {
        "root": "Home & Kitchen > Bedding & Decor",
        "types": ["throw pillow covers", "blackout curtains", "table lamp"],
        "brands": ["Cozyden", "Lumina", "Hearthwell", "Softnest", "Oakhaven", "Stillroom"],
        "attributes": [
            "machine washable",
            "living room",
            "bedroom",
            "easy to clean",
            "energy saving",
            "thermal insulated",
            "hidden zipper",
            "dimmable",
            "modern style",
            "mid century",
        ],
        "options": {
            "color": COLORS,
            "size": ["18 x 18 inch", "20 x 20 inch", "52 x 63 inch", "52 x 84 inch", "one size"],
        },
        "price": (12.0, 120.0),
    },
    "kitchen": {
        "root": "Home & Kitchen > Kitchen & Dining",
        "types": ["coffee mug", "chef knife", "nonstick frying pan"],
        "brands": ["Ironleaf", "Cuisina", "Bladecraft", "Potters Lane", "Searwell", "Hobnob"],
        "attributes": [
            "dishwasher safe",
            "microwave safe",
            "stainless steel",
            "bpa free",
            "ceramic",
            "ergonomic handle",
            "induction compatible",
            "oven safe",
            "high carbon",
            "gift box",
        ],
        "options": {
            "size": ["8 inch", "10 inch", "12 inch", "12 oz", "16 oz"],
            "color": COLORS[:6],
        },
        "price": (7.0, 110.0),
    },
    "sports": {
        "root": "Sports & Outdoors > Exercise & Fitness",
        "types": ["yoga mat", "water bottle", "resistance bands"],
        "brands": ["Flexcore", "Summitgear", "Hydraflo", "Pulsefit", "Ironbend", "Zenmat"],
        "attributes": [
            "non slip",
            "eco friendly",
            "bpa free",
            "leak proof",
            "extra thick",
            "carrying strap",
            "insulated",
            "portable",
            "heavy duty",
            "latex free",
        ],
        "options": {"color": COLORS[:10], "size": ["small", "medium", "large", "20 oz", "32 oz"]},
        "price": (6.0, 80.0),
    },
    "pets": {
        "root": "Pet Supplies > Dogs & Cats",
        "types": ["dog chew toy", "cat scratching post", "dog leash"],
        "brands": ["Pawsome", "Tailwag", "Furbud", "Whiskerly", "Barkley", "Petnest"],
        "attributes": [
            "durable",
            "non toxic",
            "reflective",
            "small breed",
            "large breed",
            "easy to clean",
            "natural rubber",
            "sisal rope",
            "padded handle",
            "indoor",
        ],
        "options": {"size": ["small", "medium", "large", "x-large"], "color": COLORS[:7]},
        "price": (5.0, 90.0),
    },
    "office": {
        "root": "Office Products > Office & School Supplies",
        "types": ["gel pens", "spiral notebook", "desk organizer"],
        "brands": ["Inkwell", "Papercraft", "Deskmate", "Quillon", "Scribo", "Officio"],
        "attributes": [
            "quick drying",
            "fine point",
            "acid free paper",
            "college ruled",
            "refillable",
            "bamboo",
            "space saving",
            "assorted colors",
            "smudge proof",
            "hardcover",
        ],
        "options": {
            "size": ["pack of 3", "pack of 10", "pack of 24", "a5", "letter size"],
            "color": COLORS[:6],
        },
        "price": (4.0, 45.0),
    },
}

TEMPLATES = [
    "i need {attrs} {type}{opts}, and price lower than {price:.2f} dollars",
    "i am looking for {attrs} {type}{opts}, and price lower than {price:.2f} dollars",
    "i want to buy {attrs} {type}{opts}, and price lower than {price:.2f} dollars",
    "find me {attrs} {type}{opts}, and price lower than {price:.2f} dollars",
]
OPTION_PHRASES = {
    "color": "{v} color",
    "size": "size {v}",
    "scent": "{v} scent",
    "flavor": "{v} flavor",
}
PRICE_RANGE = [10.0 * i for i in range(1, 100)]
EXCLUSIVE = [
    {"long sleeve", "short sleeve"},
    {"small breed", "large breed"},
    {"dry skin", "sensitive skin"},
]
"""Attribute pairs that never go on one product."""


def make_asin(rng: random.Random, taken: set[str]) -> str:
    while True:
        asin = "B0" + "".join(rng.choices(string.ascii_uppercase + string.digits, k=8))
        if asin not in taken:
            taken.add(asin)
            return asin


def make_product(rng: random.Random, category: str, spec: dict, asin: str) -> Product:
    kind = rng.choice(spec["types"])
    brand = rng.choice(spec["brands"])
    while True:
        attributes = rng.sample(spec["attributes"], rng.randint(3, 5))
        if not any(pair <= set(attributes) for pair in EXCLUSIVE):
            break
    options: dict[str, tuple[str, ...]] = {}
    for group, values in spec["options"].items():
        if group == "size" and category in ("shoes", "clothing"):
            start = rng.randint(0, len(values) - 4)
            options[group] = tuple(values[start : start + rng.randint(4, len(values) - start)])
        else:
            k = rng.randint(2, min(5, len(values)))
            options[group] = tuple(sorted(rng.sample(values, k), key=values.index))
    low, high = spec["price"]
    price = round(rng.uniform(low, high), 2)
    title = (
        f"{brand} {attributes[0].title()} {kind.title()} - "
        f"{attributes[1].title()}, {rng.choice(['Classic', 'Premium', 'Everyday', 'Pro'])} Edition"
    )
    features = tuple(f"{a.capitalize()}: made for everyday use." for a in attributes)
    description = (
        f"The {brand} {kind} is designed to be {attributes[0]} and {attributes[-1]}. "
        f"A reliable choice in our {category} range."
    )
    return Product(
        asin=asin,
        title=title,
        price=price,
        category=category,
        product_category=f"{spec['root']} > {kind.title()}".replace(" > ", f" {SEP} "),
        query=kind,
        attributes=tuple(attributes),
        options=options,
        features=features,
        description=description,
    )


def price_upper(rng: random.Random, price: float) -> float:
    above = [p for p in PRICE_RANGE if p > price][:4]
    return sorted(rng.sample(above, 2))[1]


def make_goal(rng: random.Random, product: Product, session_id: str) -> tuple[Goal, tuple]:
    n_attrs = rng.randint(1, min(3, len(product.attributes)))
    attrs = sorted(rng.sample(product.attributes, n_attrs), key=product.attributes.index)
    chosen = {group: rng.choice(values) for group, values in product.options.items()}
    phrases = [
        v if v.startswith("pack of") else OPTION_PHRASES.get(g, "{v}").format(v=v)
        for g, v in chosen.items()
    ]
    opts = (" in " + " and ".join(phrases)) if phrases else ""
    bound = price_upper(rng, product.price)
    instruction = rng.choice(TEMPLATES).format(
        attrs=", ".join(attrs), type=product.query, opts=opts, price=bound
    )
    goal = Goal(
        session_id=session_id,
        instruction=instruction,
        asin=product.asin,
        attributes=tuple(attrs),
        options=tuple(chosen.values()),
        price_upper=bound,
        query=product.query,
        name=product.title,
        product_category=product.product_category,
        category=product.category,
    )
    signature = (product.query, tuple(sorted(attrs)), tuple(sorted(chosen.items())))
    return goal, signature


def build() -> tuple[list[Product], list[Goal], list[Goal]]:
    rng = random.Random(SEED)
    taken: set[str] = set()
    products = [
        make_product(rng, category, spec, make_asin(rng, taken))
        for category, spec in CATEGORIES.items()
        for _ in range(N_PRODUCTS_PER_CATEGORY)
    ]
    rng.shuffle(products)
    targets = list(products)
    rng.shuffle(targets)
    eval_goals: list[Goal] = []
    seen: set[tuple] = set()
    texts: set[str] = set()
    cursor = 0
    while len(eval_goals) < N_EVAL:
        goal, signature = make_goal(rng, targets[cursor], f"eval-{len(eval_goals):04d}")
        cursor += 1
        if signature in seen or goal.instruction in texts:
            continue
        seen.add(signature)
        texts.add(goal.instruction)
        eval_goals.append(goal)
    train_goals: list[Goal] = []
    while len(train_goals) < N_TRAIN:
        product = targets[cursor]
        cursor += 1
        for _ in range(5):  # a few draws to avoid an eval signature
            goal, signature = make_goal(rng, product, f"train-{len(train_goals):04d}")
            if signature not in seen and goal.instruction not in texts:
                break
        else:
            continue
        seen.add(signature)
        texts.add(goal.instruction)
        train_goals.append(goal)
    return products, train_goals, eval_goals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped files")
    parser.add_argument("--out", type=Path, default=DATA_DIR)
    args = parser.parse_args()
    products, train, evals = build()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    targets = {"catalog.json": products, "goals_train.json": train, "goals_eval.json": evals}
    if args.check:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            differ = []
            for name, rows in targets.items():
                dump_json(Path(tmp) / name, rows)
                if (Path(tmp) / name).read_bytes() != (out / name).read_bytes():
                    differ.append(name)
        if differ:
            print(f"differ from a fresh build: {', '.join(differ)}", file=sys.stderr)
            return 1
        print("shipped data matches a fresh build")
        return 0
    for name, rows in targets.items():
        dump_json(out / name, rows)
        print(f"{out / name}: {len(rows)} rows, {(out / name).stat().st_size / 1e3:.0f} kB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
