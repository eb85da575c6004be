"""Generate the shipped DeepSearchQA-style offline data: a fictional encyclopedia and questions.

The world (provinces, cities, rivers, waters, mountains, people, companies, novels) is drawn from
a fixed seed, written as short encyclopedia entries (``corpus.json``), and multi-hop questions are
asked over it (``questions_train.json`` / ``questions_eval.json``, disjoint: no (template, entity)
pair and no question text appears in both). Each question keeps its gold answer (one item, or a
list for set answers), the documents that support it and the searches that find them (used by
the scripted expert).

    python scripts/build_data.py            # write src/autorl_task_deepsearchqa/data/*.json
    python scripts/build_data.py --check    # regenerate in memory, fail if the shipped files differ

Standard library only; deterministic for a given seed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parents[1] / "src" / "autorl_task_deepsearchqa" / "data"
SEED = 20261123
N_TRAIN = 100
N_EVAL = 100

ONSETS = [
    "b",
    "br",
    "c",
    "d",
    "dr",
    "f",
    "g",
    "gr",
    "h",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "sk",
    "st",
    "t",
    "th",
    "v",
    "w",
    "z",
    "kl",
    "fr",
    "tr",
]
VOWELS = ["a", "e", "i", "o", "u", "ae", "ei", "ou", "ia"]
CODAS = ["", "", "n", "r", "l", "s", "th", "nd", "rk", "lt", "m", "x"]
OCCUPATIONS = [
    "painter",
    "composer",
    "chemist",
    "novelist",
    "engineer",
    "architect",
    "astronomer",
    "sculptor",
]
INDUSTRIES = [
    "shipbuilding",
    "textiles",
    "glassware",
    "railway signals",
    "printing presses",
    "clockwork",
    "porcelain",
    "telescopes",
    "bicycles",
    "paper",
]
NOVEL_NOUNS = ["Letters", "Winter", "Harbour", "Orchard", "Bell", "Crossing", "Lantern", "Archive"]
GIVEN = [
    "Ada",
    "Bram",
    "Cora",
    "Dario",
    "Elin",
    "Falk",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Kira",
    "Lev",
    "Mira",
    "Nils",
    "Orla",
    "Pavel",
    "Quinn",
    "Rosa",
    "Sven",
    "Tove",
    "Ugo",
    "Vera",
    "Wim",
    "Yara",
    "Zeno",
    "Alba",
    "Bent",
    "Clio",
    "Edda",
    "Ivo",
]


class Names:
    """Unique made-up words, so every entity is one distinct search term."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def word(self, syllables: int, suffix: str = "") -> str:
        while True:
            parts = [self.rng.choice(ONSETS) + self.rng.choice(VOWELS) for _ in range(syllables)]
            word = ("".join(parts) + self.rng.choice(CODAS) + suffix).capitalize()
            if word.lower() not in self.used and 4 <= len(word) <= 12:
                self.used.add(word.lower())
                return word


@dataclass
class World:
    provinces: list[dict[str, Any]] = field(default_factory=list)
    cities: list[dict[str, Any]] = field(default_factory=list)
    rivers: list[dict[str, Any]] = field(default_factory=list)
    waters: list[dict[str, Any]] = field(default_factory=list)
    mountains: list[dict[str, Any]] = field(default_factory=list)
    people: list[dict[str, Any]] = field(default_factory=list)
    companies: list[dict[str, Any]] = field(default_factory=list)
    novels: list[dict[str, Any]] = field(default_factory=list)


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def build_world(rng: random.Random) -> World:
    names = Names(rng)
    w = World()
    for _ in range(6):
        kind = rng.choice(["Sea", "Lake", "Bay"])
        w.waters.append({"name": f"{names.word(2)} {kind}", "kind": kind.lower()})
    for _ in range(6):
        w.mountains.append({"name": f"{names.word(2)} Mountains", "peak": rng.randint(1800, 4200)})
    for _ in range(8):
        w.provinces.append(
            {
                "name": names.word(rng.choice([2, 3]), "ia"),
                "founded": rng.randint(1150, 1700),
                "neighbours": [],
            }
        )
    # a ring of provinces plus a few chords: every province has 2-3 neighbours
    n = len(w.provinces)
    edges = {tuple(sorted((i, (i + 1) % n))) for i in range(n)}
    while len(edges) < n + 3:
        a, b = rng.sample(range(n), 2)
        if len([e for e in edges if a in e]) < 3 and len([e for e in edges if b in e]) < 3:
            edges.add(tuple(sorted((a, b))))
    for a, b in sorted(edges):
        w.provinces[a]["neighbours"].append(w.provinces[b]["name"])
        w.provinces[b]["neighbours"].append(w.provinces[a]["name"])
    for province in w.provinces:
        for i in range(6):
            w.cities.append(
                {
                    "name": names.word(rng.choice([2, 3])),
                    "province": province["name"],
                    "founded": rng.randint(900, 1850),
                    "population": rng.randint(8, 900) * 1000,
                    "capital": i == 0,
                    "river": None,
                }
            )
        province["capital"] = w.cities[-6]["name"]
    cities = list(w.cities)
    rng.shuffle(cities)
    for r in range(12):
        stretch = cities[r * 4 : r * 4 + rng.choice([3, 4])]
        river = {
            "name": names.word(2),
            "source": rng.choice(w.mountains)["name"],
            "mouth": rng.choice(w.waters)["name"],
            "length_km": rng.randint(80, 900),
            "cities": [c["name"] for c in stretch],
        }
        for c in stretch:
            c["river"] = river["name"]
        w.rivers.append(river)
    given = list(GIVEN)
    for i in range(150):
        occupation = OCCUPATIONS[i % len(OCCUPATIONS)]
        w.people.append(
            {
                "name": f"{rng.choice(given)} {names.word(rng.choice([2, 3]))}",
                "occupation": occupation,
                "born": rng.randint(1780, 1960),
                "birthplace": rng.choice(w.cities)["name"],
                "novels": [],
                "founded": [],
            }
        )
    novelists = [p for p in w.people if p["occupation"] == "novelist"]
    for i in range(60):
        author = novelists[i % len(novelists)]
        title = f"The {names.word(2)} {rng.choice(NOVEL_NOUNS)}"
        year = author["born"] + rng.randint(24, 60)
        w.novels.append({"title": title, "author": author["name"], "year": year})
        author["novels"].append(title)
    founders = [p for p in w.people if p["occupation"] in ("engineer", "chemist", "architect")]
    rng.shuffle(founders)
    for founder in founders[:40]:
        company = {
            "name": f"{names.word(2)} {rng.choice(['Works', 'Company', 'Industries', 'Brothers'])}",
            "founder": founder["name"],
            "industry": rng.choice(INDUSTRIES),
            "headquarters": rng.choice(w.cities)["name"],
            "founded": founder["born"] + rng.randint(22, 50),
        }
        w.companies.append(company)
        founder["founded"].append(company["name"])
    return w


def documents(w: World) -> list[dict[str, str]]:
    """Encyclopedia entries: the facts a question needs come first (they fit the snippet)."""
    docs: list[dict[str, str]] = []

    def add(kind: str, title: str, text: str) -> None:
        docs.append({"id": f"{kind}-{len(docs):04d}", "title": title, "text": text})

    for p in w.provinces:
        add(
            "province",
            p["name"],
            f"{p['name']} is a province of the Republic of Calder. Its capital is {p['capital']}. "
            f"{p['name']} borders {_join(p['neighbours'])}. It was established as a province in "
            f"{p['founded']}.",
        )
    for c in w.cities:
        role = (
            f"It is the capital of the province of {c['province']}."
            if c["capital"]
            else f"It lies in the province of {c['province']}."
        )
        river = f" The city stands on the {c['river']} river." if c["river"] else ""
        add(
            "city",
            c["name"],
            f"{c['name']} is a city in the Republic of Calder. {role}{river} It was founded in "
            f"{c['founded']} and has about {c['population']:,} inhabitants.",
        )
    for r in w.rivers:
        add(
            "river",
            f"{r['name']} River",
            f"The {r['name']} is a river of the Republic of Calder, {r['length_km']} km long. It "
            f"rises in the {r['source']} and flows into the {r['mouth']}. Cities on the "
            f"{r['name']}: {_join(r['cities'])}.",
        )
    for water in w.waters:
        feeders = [r["name"] for r in w.rivers if r["mouth"] == water["name"]]
        fed = f" Rivers flowing into it: {_join(feeders)}." if feeders else ""
        add(
            "water",
            water["name"],
            f"The {water['name']} is a {water['kind']} on the edge of the Republic of Calder.{fed}",
        )
    for m in w.mountains:
        sources = [r["name"] for r in w.rivers if r["source"] == m["name"]]
        src = f" Rivers rising there: {_join(sources)}." if sources else ""
        add(
            "mountains",
            m["name"],
            f"The {m['name']} are a mountain range of the Republic of Calder; the highest peak "
            f"reaches {m['peak']} m.{src}",
        )
    for p in w.people:
        extra = ""
        if p["novels"]:
            extra = f" Novels: {_join(p['novels'])}."
        if p["founded"]:
            extra += f" Founder of {_join(p['founded'])}."
        add(
            "person",
            p["name"],
            f"{p['name']} (born {p['born']}) is a {p['occupation']} born in the city of "
            f"{p['birthplace']}.{extra}",
        )
    for c in w.companies:
        add(
            "company",
            c["name"],
            f"{c['name']} is a {c['industry']} maker founded in {c['founded']} by "
            f"{c['founder']}. Its headquarters are in the city of {c['headquarters']}.",
        )
    for n in w.novels:
        add(
            "novel",
            n["title"],
            f"{n['title']} is a novel by {n['author']}, first published in {n['year']}.",
        )
    return docs


def candidate_questions(w: World, rng: random.Random) -> list[dict[str, Any]]:
    """Every (template, entity) question the world allows; the caller samples and splits them."""
    city = {c["name"]: c for c in w.cities}
    province = {p["name"]: p for p in w.provinces}
    person = {p["name"]: p for p in w.people}
    river = {r["name"]: r for r in w.rivers}
    out: list[dict[str, Any]] = []

    def q(
        template: str,
        group: str,
        text: str,
        answer: list[str],
        kind: str,
        searches: list[str],
    ) -> None:
        out.append(
            {
                "template": template,
                "group": f"{template}:{group}",
                "question": text,
                "answer": answer,
                "answer_type": kind,
                "searches": searches,
            }
        )

    for p in w.people:
        c = city[p["birthplace"]]
        q(
            "birth_province",
            p["name"],
            f"In which province was the {p['occupation']} {p['name']} born?",
            [c["province"]],
            "single",
            [p["name"], c["name"]],
        )
    for co in w.companies:
        f = person[co["founder"]]
        q(
            "founder_birthplace",
            f["name"],
            f"In which city was the founder of {co['name']} born?",
            [f["birthplace"]],
            "single",
            [co["name"], f["name"]],
        )
        hq = city[co["headquarters"]]
        q(
            "hq_capital",
            hq["province"],
            f"What is the capital of the province where {co['name']} has its headquarters?",
            [province[hq["province"]]["capital"]],
            "single",
            [co["name"], hq["name"], hq["province"]],
        )
    for n in w.novels:
        a = person[n["author"]]
        q(
            "author_born",
            a["name"],
            f"In what year was the author of the novel {n['title']} born?",
            [str(a["born"])],
            "single",
            [n["title"], a["name"]],
        )
        if len(a["novels"]) >= 2:
            q(
                "author_novels",
                a["name"],
                f"List every novel written by the author of {n['title']}.",
                list(a["novels"]),
                "set",
                [n["title"], a["name"]],
            )
    for c in w.cities:
        if c["river"]:
            r = river[c["river"]]
            q(
                "river_mouth",
                r["name"],
                f"Into which body of water does the river that flows through {c['name']} empty?",
                [r["mouth"]],
                "single",
                [c["name"], f"{r['name']} River"],
            )
            others = [x for x in r["cities"] if x != c["name"]]
            q(
                "river_cities",
                r["name"],
                f"Name the other cities on the river that flows through {c['name']}.",
                others,
                "set",
                [c["name"], f"{r['name']} River"],
            )
        if c["capital"]:
            p = province[c["province"]]
            q(
                "capital_neighbours",
                p["name"],
                f"Which provinces border the province whose capital is {c['name']}?",
                list(p["neighbours"]),
                "set",
                [c["name"], p["name"]],
            )
    return out


def build(seed: int = SEED) -> dict[str, Any]:
    rng = random.Random(seed)
    world = build_world(rng)
    docs = documents(world)
    by_title = {d["title"].lower(): d["id"] for d in docs}
    questions = candidate_questions(world, rng)
    for question in questions:
        question["support"] = [by_title[s.lower()] for s in question["searches"]]
    rng.shuffle(questions)
    # balance: take questions template by template so both splits see every template; a group
    # (template + the entity that decides the answer, e.g. the author for "every novel by the
    # author of X") goes to one split only, so no eval answer is learnt from a train twin
    by_template: dict[str, list[dict[str, Any]]] = {}
    for question in questions:
        by_template.setdefault(question["template"], []).append(question)
    splits: dict[str, list[dict[str, Any]]] = {"eval": [], "train": []}
    sizes = {"eval": N_EVAL, "train": N_TRAIN}
    owner: dict[str, str] = {}

    def take(pool: list[dict[str, Any]], split: str) -> bool:
        for i in range(len(pool) - 1, -1, -1):
            if owner.setdefault(pool[i]["group"], split) == split:
                splits[split].append(pool.pop(i))
                return True
        return False

    templates = sorted(by_template)
    while any(len(splits[k]) < sizes[k] for k in splits):
        progressed = False
        for t in templates:
            for split in ("eval", "train"):
                if len(splits[split]) < sizes[split] and take(by_template[t], split):
                    progressed = True
        if not progressed:
            raise SystemExit("the world is too small for the requested split sizes")
    train, evals = splits["train"], splits["eval"]
    assert not {r["group"] for r in train} & {r["group"] for r in evals}
    for prefix, rows in (("dsqa-train", train), ("dsqa-eval", evals)):
        for i, row in enumerate(rows):
            row["session_id"] = f"{prefix}-{i:04d}"
    return {
        "corpus.json": docs,
        "questions_train.json": [_public(r) for r in train],
        "questions_eval.json": [_public(r) for r in evals],
    }


def _public(row: dict[str, Any]) -> dict[str, Any]:
    keys = ("session_id", "question", "answer", "answer_type", "template", "support", "searches")
    return {k: row[k] for k in keys}


def dumps(payload: Any) -> str:
    return json.dumps(payload, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="verify the shipped files")
    parser.add_argument("--out", type=Path, default=DATA_DIR)
    args = parser.parse_args(argv)
    files = build()
    train_text = {r["question"] for r in files["questions_train.json"]}
    assert not train_text & {r["question"] for r in files["questions_eval.json"]}
    if args.check:
        stale = [
            name
            for name, payload in files.items()
            if not (args.out / name).is_file()
            or (args.out / name).read_text("utf-8") != dumps(payload)
        ]
        if stale:
            print(f"stale or missing: {', '.join(stale)} (run scripts/build_data.py)")
            return 1
        print("shipped data is up to date")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, payload in files.items():
        (args.out / name).write_text(dumps(payload), encoding="utf-8")
        print(f"wrote {args.out / name} ({len(payload)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
