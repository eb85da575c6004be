"""Write (or check) the offline AlpacaEval-style split shipped with autorl-task-alpacaeval.

Every instruction and reference answer here was written for this project (no text is taken from
Alpaca or AlpacaEval). Hand-written tables (a glossary, how-to steps, rewrites, labelled
sentences, facts) are turned into instruction/answer pairs; a few kinds are computed (unit
conversions, sorting, counting) so their answers are right by construction. Each item is used
once, and a fixed seed deals every category between train and eval, so the two are disjoint.

    python scripts/make_offline_split.py           # (re)write src/.../data/offline_*.jsonl
    python scripts/make_offline_split.py --check   # exit 1 when the shipped files differ
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[1] / "src" / "autorl_task_alpacaeval" / "data"
SEED = 20261123
EVAL_SHARE = 0.28
GENERATOR = "autorl-offline-reference"
DATASET = "autorl-offline"

GLOSSARY = [
    (
        "photosynthesis",
        "Photosynthesis is the process by which plants, algae and some bacteria "
        "turn light energy into chemical energy. Using sunlight, they combine carbon dioxide and "
        "water into glucose and release oxygen as a by-product.",
    ),
    (
        "inflation",
        "Inflation is the general rise of prices in an economy over time. As prices "
        "go up, each unit of money buys fewer goods and services, so its purchasing power falls.",
    ),
    (
        "a black hole",
        "A black hole is a region of space where gravity is so strong that "
        "nothing, not even light, can escape once it crosses the boundary called the event "
        "horizon. Most form when very massive stars collapse at the end of their lives.",
    ),
    (
        "machine learning",
        "Machine learning is a branch of computer science in which programs "
        "learn patterns from data instead of following only hand-written rules. The learned model "
        "is then used to make predictions or decisions on new data.",
    ),
    (
        "a compiler",
        "A compiler is a program that translates source code written in a "
        "programming language into a lower-level form, such as machine code, that a computer can "
        "run. It usually also checks the code for errors before translating it.",
    ),
    (
        "the water cycle",
        "The water cycle is the continuous movement of water on Earth: water "
        "evaporates from oceans and lakes, condenses into clouds, falls as precipitation and flows "
        "back to the sea through rivers and groundwater.",
    ),
    (
        "a vaccine",
        "A vaccine is a preparation that trains the immune system to recognise a "
        "germ without causing the disease. After vaccination the body can respond faster and more "
        "strongly if it meets the real germ later.",
    ),
    (
        "compound interest",
        "Compound interest is interest calculated on both the original amount "
        "and the interest already added to it. Because interest earns more interest, savings grow "
        "faster over time than with simple interest.",
    ),
    (
        "an ecosystem",
        "An ecosystem is a community of living things together with their physical "
        "environment, such as soil, water and climate. Its parts interact through food chains and "
        "the cycling of energy and nutrients.",
    ),
    (
        "a metaphor",
        "A metaphor is a figure of speech that describes one thing as if it were "
        "another to suggest a likeness, without using 'like' or 'as'. For example, 'time is a "
        "thief' suggests that time takes things from us.",
    ),
    (
        "democracy",
        "Democracy is a system of government in which power belongs to the people, "
        "who rule either directly or through representatives they elect in free and fair "
        "elections.",
    ),
    (
        "a database index",
        "A database index is an extra data structure that lets a database find "
        "rows quickly without scanning the whole table, much like the index of a book. "
        "It speeds up reads at the cost of some storage and slower writes.",
    ),
    (
        "gravity",
        "Gravity is the force of attraction between objects that have mass. It keeps us "
        "on the ground, makes objects fall and holds the Moon in orbit around the Earth and the "
        "planets around the Sun.",
    ),
    (
        "supply and demand",
        "Supply and demand is the economic model of how prices are set in a "
        "market. When demand for a good exceeds its supply the price tends to rise, and "
        "when supply exceeds demand the price tends to fall.",
    ),
    (
        "an API",
        "An API (application programming interface) is a defined set of rules that lets "
        "one piece of software request data or services from another. It hides the internal "
        "details and exposes only the operations callers need.",
    ),
    (
        "erosion",
        "Erosion is the wearing away of rock and soil by natural forces such as water, "
        "wind and ice, which then carry the material to other places.",
    ),
    (
        "a haiku",
        "A haiku is a short Japanese form of poetry of three lines with five, seven and "
        "five syllables. Haiku traditionally capture a moment in nature or a season.",
    ),
    (
        "encryption",
        "Encryption is the process of turning readable data into a scrambled form "
        "that only someone with the right key can turn back into the original. It protects "
        "information that is stored or sent over a network.",
    ),
    (
        "a recession",
        "A recession is a significant decline in economic activity that lasts for "
        "months, usually seen in falling output, income, employment and trade. A common rule of "
        "thumb is two consecutive quarters of shrinking GDP.",
    ),
    (
        "DNA",
        "DNA (deoxyribonucleic acid) is the molecule that carries the genetic instructions "
        "of living organisms. It is a double helix whose sequence of four bases encodes the "
        "information used to build and run cells.",
    ),
    (
        "renewable energy",
        "Renewable energy is energy from sources that are naturally "
        "replenished, such as sunlight, wind, flowing water and geothermal heat. Unlike fossil "
        "fuels, these sources do not run out on a human timescale.",
    ),
    (
        "a neural network",
        "A neural network is a machine-learning model made of layers of simple "
        "connected units whose connection weights are adjusted during training. Stacking many "
        "layers lets it learn complex patterns in images, text or sound.",
    ),
    (
        "osmosis",
        "Osmosis is the movement of water through a semi-permeable membrane from a "
        "region of lower solute concentration to a region of higher solute concentration, until "
        "the two sides are balanced.",
    ),
    (
        "a budget",
        "A budget is a plan that lists expected income and expenses over a period. It "
        "helps a person or organisation decide how to spend money and avoid spending more than "
        "they earn.",
    ),
    (
        "version control",
        "Version control is a system that records changes to files over time so "
        "you can review history, restore earlier versions and let several people work on the same "
        "project. Git is the most widely used example.",
    ),
    (
        "the greenhouse effect",
        "The greenhouse effect is the warming of a planet's surface caused "
        "by gases in its atmosphere, such as carbon dioxide and water vapour, that trap heat "
        "radiated from the ground.",
    ),
    (
        "a sonnet",
        "A sonnet is a poem of fourteen lines with a fixed rhyme scheme, usually "
        "written in iambic pentameter. Famous forms are the Petrarchan and the Shakespearean "
        "sonnet.",
    ),
    (
        "opportunity cost",
        "Opportunity cost is the value of the best alternative you give up when "
        "you make a choice. For example, the opportunity cost of an evening spent studying might "
        "be the wages you could have earned working.",
    ),
    (
        "a firewall",
        "A firewall is a security system that monitors network traffic and blocks or "
        "allows it according to a set of rules. It stands between a trusted network and untrusted "
        "ones such as the internet.",
    ),
    (
        "biodiversity",
        "Biodiversity is the variety of life in a place: the number of species, the "
        "genetic differences within them and the range of ecosystems they form.",
    ),
    (
        "a placebo",
        "A placebo is a treatment with no active ingredient, such as a sugar pill, "
        "used in experiments to compare against a real treatment. Patients sometimes feel better "
        "after a placebo simply because they expect to.",
    ),
    (
        "recursion",
        "Recursion is a technique in which a function solves a problem by calling "
        "itself on smaller versions of the same problem, until it reaches a simple base case it "
        "can answer directly.",
    ),
    (
        "a tariff",
        "A tariff is a tax a government puts on imported goods. It raises their price, "
        "which can protect local producers but also makes those goods more expensive for "
        "consumers.",
    ),
    (
        "plate tectonics",
        "Plate tectonics is the theory that Earth's outer shell is split into "
        "large plates that slowly move over the mantle. Their movements cause earthquakes, "
        "volcanoes and the formation of mountains.",
    ),
    (
        "cloud computing",
        "Cloud computing is the delivery of computing resources, such as "
        "servers, storage and software, over the internet on demand. Users pay for what they use "
        "instead of owning and maintaining the hardware.",
    ),
    (
        "an allergy",
        "An allergy is an overreaction of the immune system to a normally harmless "
        "substance, such as pollen, dust or certain foods, causing symptoms like sneezing, itching "
        "or swelling.",
    ),
]

EXPLAIN_FORMS = [
    "Explain what {term} is in two or three sentences.",
    "What is {term}? Give a short explanation.",
    "Briefly describe {term} to a high-school student.",
]

HOW_TO = [
    (
        "boil an egg",
        [
            "Place the egg in a small pot and cover it with cold water.",
            "Bring the water to a boil over medium-high heat.",
            "Lower the heat and simmer: about 6 minutes for a soft yolk, 10 for hard.",
            "Move the egg into cold water for a minute, then peel it.",
        ],
    ),
    (
        "change a flat bicycle tyre",
        [
            "Remove the wheel from the bike.",
            "Use tyre levers to take one side of the tyre off the rim.",
            "Pull out the old inner tube and check the tyre for sharp objects.",
            "Fit a new or patched tube, push the tyre back onto the rim "
            "and inflate it to the pressure printed on the tyre.",
            "Refit the wheel and check that it spins freely.",
        ],
    ),
    (
        "start a vegetable garden",
        [
            "Choose a sunny spot that gets six or more hours of light.",
            "Clear weeds and loosen the soil, mixing in compost.",
            "Pick a few easy vegetables such as lettuce, beans and tomatoes.",
            "Sow seeds or plant seedlings at the spacing on the packet.",
            "Water regularly and keep removing weeds.",
        ],
    ),
    (
        "write a good cover letter",
        [
            "Address it to a named person when you can.",
            "Open by saying which job you want and why it interests you.",
            "Give two or three concrete examples of relevant achievements.",
            "Explain what you would bring to the team.",
            "Close politely, thank the reader and keep it to one page.",
        ],
    ),
    (
        "make a cup of tea",
        [
            "Boil fresh water.",
            "Warm the cup or pot with a little hot water and pour it away.",
            "Add a tea bag or a teaspoon of loose tea per cup.",
            "Pour on the water and steep for 3 to 5 minutes.",
            "Remove the tea and add milk, sugar or lemon to taste.",
        ],
    ),
    (
        "back up the files on a computer",
        [
            "Decide which folders matter, such as documents and photos.",
            "Choose a destination: an external drive, a cloud service or both.",
            "Use the system's backup tool to copy the files and schedule automatic backups.",
            "Check now and then that you can restore a file.",
        ],
    ),
    (
        "prepare for a job interview",
        [
            "Research the company and the role.",
            "Prepare short stories that show your key skills.",
            "Practise answers to common questions out loud.",
            "Prepare a few questions to ask the interviewer.",
            "Plan your route and arrive ten minutes early.",
        ],
    ),
    (
        "remove a coffee stain from a shirt",
        [
            "Blot the stain with a clean cloth; do not rub.",
            "Rinse it from the back with cold water.",
            "Rub in a little liquid detergent and leave it for five minutes.",
            "Wash the shirt as usual and check the stain before drying it.",
        ],
    ),
    (
        "learn a new language faster",
        [
            "Practise a little every day instead of long, rare sessions.",
            "Learn the most common words first.",
            "Listen to podcasts or watch shows in the language.",
            "Speak with native speakers or a tutor as early as you can.",
            "Review words with spaced-repetition flashcards.",
        ],
    ),
    (
        "plant a tree",
        [
            "Dig a hole twice as wide as the root ball and as deep as it.",
            "Loosen the roots gently and set the tree in the hole.",
            "Fill the hole with soil and press it down lightly.",
            "Water it deeply and spread mulch around the base.",
            "Keep watering regularly during the first year.",
        ],
    ),
    (
        "create a strong password",
        [
            "Use at least 12 characters.",
            "Combine several unrelated words, or mix letters, numbers and symbols.",
            "Avoid names, birthdays and common words like 'password'.",
            "Use a different password for every account, kept in a password manager.",
        ],
    ),
    (
        "reduce food waste at home",
        [
            "Plan meals and shop with a list.",
            "Store food properly and put older items at the front.",
            "Freeze leftovers and bread you will not eat soon.",
            "Cook with what you have before buying more.",
            "Compost scraps that cannot be eaten.",
        ],
    ),
    (
        "clean a laptop keyboard",
        [
            "Shut down the laptop and unplug it.",
            "Turn it upside down and tap it gently to shake out crumbs.",
            "Blow between the keys with compressed air.",
            "Wipe the keys with a cloth lightly dampened with isopropyl alcohol.",
            "Let it dry completely before switching it on.",
        ],
    ),
    (
        "give a short presentation",
        [
            "Decide on the one message the audience should remember.",
            "Build three main points that support it.",
            "Make simple slides with few words.",
            "Rehearse out loud and time yourself.",
            "Speak slowly, look at the audience and end with your message.",
        ],
    ),
    (
        "train a puppy to sit",
        [
            "Hold a treat close to the puppy's nose.",
            "Move your hand up so its head follows and its bottom lowers.",
            "Say 'sit' as soon as it sits, and give the treat.",
            "Repeat in short sessions several times a day.",
            "Slowly stop using treats every time and use praise instead.",
        ],
    ),
    (
        "make a simple budget",
        [
            "Write down your monthly income after tax.",
            "List your fixed costs such as rent and bills.",
            "Track variable spending for a month.",
            "Set limits for each category and a savings goal.",
            "Review the budget every month and adjust it.",
        ],
    ),
    (
        "fall asleep more easily",
        [
            "Go to bed and get up at the same time every day.",
            "Avoid caffeine in the afternoon and heavy meals late.",
            "Put screens away 30 to 60 minutes before bed.",
            "Keep the bedroom dark, quiet and cool.",
            "If you cannot sleep after 20 minutes, get up and read until you feel sleepy.",
        ],
    ),
    (
        "write a clear email",
        [
            "Use a subject line that says what the email is about.",
            "State the purpose in the first sentence.",
            "Keep paragraphs short and put requests on their own line.",
            "Say what you need and by when.",
            "Read it once before sending to fix mistakes.",
        ],
    ),
]

HOW_FORMS = [
    "How do I {task}?",
    "Give step-by-step instructions to {task}.",
    "What are the steps to {task}?",
]

LISTS = [
    ("primary colours (in the traditional colour wheel)", ["red", "yellow", "blue"]),
    ("planets of the solar system closest to the Sun", ["Mercury", "Venus", "Earth", "Mars"]),
    ("programming languages", ["Python", "Java", "C", "JavaScript", "Rust"]),
    ("musical instruments with strings", ["guitar", "violin", "cello", "harp", "banjo"]),
    (
        "healthy breakfast foods",
        ["oatmeal", "Greek yogurt", "eggs", "fresh fruit", "whole-grain toast"],
    ),
    ("countries in South America", ["Brazil", "Argentina", "Chile", "Peru", "Colombia"]),
    (
        "ways to save energy at home",
        [
            "switch off lights in empty rooms",
            "use LED bulbs",
            "lower the heating by one degree",
            "unplug chargers when not in use",
        ],
    ),
    ("mammals that live in the ocean", ["blue whale", "dolphin", "seal", "sea otter", "manatee"]),
    ("board games", ["chess", "Monopoly", "Scrabble", "Go", "Catan"]),
    (
        "tips for staying focused while studying",
        [
            "put your phone in another room",
            "work in 25-minute blocks with short breaks",
            "set one clear goal per session",
            "keep your desk tidy",
        ],
    ),
    ("noble gases", ["helium", "neon", "argon", "krypton", "xenon"]),
    ("things to pack for a beach day", ["sunscreen", "a towel", "water", "a hat", "sunglasses"]),
    (
        "common symptoms of a cold",
        ["a runny nose", "a sore throat", "sneezing", "a cough", "mild tiredness"],
    ),
    ("renewable energy sources", ["solar", "wind", "hydroelectric", "geothermal", "biomass"]),
    ("herbs used in Italian cooking", ["basil", "oregano", "rosemary", "parsley", "sage"]),
    (
        "benefits of regular exercise",
        ["a stronger heart", "better sleep", "improved mood", "healthier weight", "more energy"],
    ),
    ("parts of a flower", ["petals", "sepals", "stamens", "pistil", "stem"]),
    (
        "questions to ask before adopting a pet",
        [
            "How much time can I spend with it each day?",
            "Can I afford food and vet bills?",
            "Does my home have enough space?",
            "Who will care for it when I travel?",
        ],
    ),
    (
        "essential kitchen tools",
        ["a sharp chef's knife", "a cutting board", "a frying pan", "a saucepan", "a wooden spoon"],
    ),
    (
        "ways to be a good listener",
        [
            "make eye contact",
            "do not interrupt",
            "ask follow-up questions",
            "repeat back what you heard in your own words",
        ],
    ),
]

SENTIMENT = [
    ("The battery lasts all day and the screen is gorgeous.", "Positive"),
    ("The delivery was late and the box arrived crushed.", "Negative"),
    ("The hotel room was clean, quiet and the staff were lovely.", "Positive"),
    ("I waited forty minutes for a cold pizza.", "Negative"),
    ("The package arrived on Tuesday.", "Neutral"),
    ("This is the best book I have read all year.", "Positive"),
    ("The app keeps crashing whenever I open the camera.", "Negative"),
    ("The meeting has been moved to 3 pm.", "Neutral"),
    ("Customer support solved my problem in five minutes.", "Positive"),
    ("The shoes fell apart after two weeks.", "Negative"),
    ("The museum opens at nine and closes at five.", "Neutral"),
    ("What a beautiful, moving film.", "Positive"),
    ("The instructions were confusing and a part was missing.", "Negative"),
    ("The train to Leeds leaves from platform four.", "Neutral"),
    ("I love how light and comfortable this jacket is.", "Positive"),
    ("Overpriced, bland food and rude service.", "Negative"),
    ("The report contains twelve pages and two charts.", "Neutral"),
    ("Setting it up took minutes and it works perfectly.", "Positive"),
    ("The sequel was a huge disappointment.", "Negative"),
    ("Our office is on the second floor.", "Neutral"),
]

SENTIMENT_FORMS = [
    'Classify the sentiment of this review as Positive, Negative or Neutral: "{text}"',
    "Is the following sentence positive, negative or neutral?\n\n{text}",
]

ANIMALS = [
    ("eagle", "bird"),
    ("salmon", "fish"),
    ("dolphin", "mammal"),
    ("crocodile", "reptile"),
    ("frog", "amphibian"),
    ("penguin", "bird"),
    ("shark", "fish"),
    ("bat", "mammal"),
    ("tortoise", "reptile"),
    ("salamander", "amphibian"),
    ("ostrich", "bird"),
    ("whale", "mammal"),
    ("cobra", "reptile"),
    ("tuna", "fish"),
    ("kangaroo", "mammal"),
]

REWRITE_FORMAL = [
    (
        "hey, can u send me the file asap?",
        "Hello, could you please send me the file as soon as possible?",
    ),
    ("we gotta push the meeting to next week.", "We need to postpone the meeting until next week."),
    ("thx for the help, u rock!", "Thank you very much for your help; I really appreciate it."),
    ("sorry, can't make it tonight.", "I apologise, but I will not be able to attend tonight."),
    (
        "the printer's broken again, someone fix it pls.",
        "The printer is out of order again. Could someone please repair it?",
    ),
    ("gimme a call when ur free.", "Please call me when you are available."),
    ("this report is kinda messy.", "This report would benefit from clearer organisation."),
    ("i dunno when the package will show up.", "I am not certain when the package will arrive."),
    ("lemme know if you need anything else.", "Please let me know if you need anything further."),
    ("the new guy is super good at coding.", "Our new colleague is highly skilled at programming."),
]

REWRITE_PAST = [
    ("She walks to school every morning.", "She walked to school every morning."),
    ("They build a new bridge across the river.", "They built a new bridge across the river."),
    ("I write a letter to my grandmother.", "I wrote a letter to my grandmother."),
    ("The children swim in the lake.", "The children swam in the lake."),
    ("He teaches maths at the local school.", "He taught maths at the local school."),
    ("We eat dinner at seven.", "We ate dinner at seven."),
    ("The wind blows the leaves off the trees.", "The wind blew the leaves off the trees."),
    ("My brother buys fresh bread every day.", "My brother bought fresh bread every day."),
]

CAPITALS = [
    ("France", "Paris"),
    ("Japan", "Tokyo"),
    ("Canada", "Ottawa"),
    ("Australia", "Canberra"),
    ("Brazil", "Brasília"),
    ("Egypt", "Cairo"),
    ("Kenya", "Nairobi"),
    ("Norway", "Oslo"),
    ("Argentina", "Buenos Aires"),
    ("India", "New Delhi"),
    ("Italy", "Rome"),
    ("Spain", "Madrid"),
    ("Germany", "Berlin"),
    ("Mexico", "Mexico City"),
    ("South Korea", "Seoul"),
    ("Portugal", "Lisbon"),
    ("Peru", "Lima"),
    ("Thailand", "Bangkok"),
    ("Poland", "Warsaw"),
    ("Morocco", "Rabat"),
]

ANTONYMS = [
    ("generous", "stingy"),
    ("ancient", "modern"),
    ("brave", "cowardly"),
    ("expand", "shrink"),
    ("visible", "invisible"),
    ("accept", "refuse"),
    ("shallow", "deep"),
    ("rare", "common"),
    ("victory", "defeat"),
    ("artificial", "natural"),
    ("increase", "decrease"),
    ("optimistic", "pessimistic"),
    ("borrow", "lend"),
    ("fragile", "sturdy"),
]

CONVERSIONS = [
    ("kilometres", "metres", 1000),
    ("hours", "minutes", 60),
    ("kilograms", "grams", 1000),
    ("minutes", "seconds", 60),
    ("litres", "millilitres", 1000),
    ("days", "hours", 24),
    ("metres", "centimetres", 100),
    ("weeks", "days", 7),
]

WORD_SETS = [
    ["pear", "apple", "mango", "cherry", "banana"],
    ["violin", "drum", "flute", "piano", "harp"],
    ["Oslo", "Berlin", "Athens", "Madrid", "Dublin"],
    ["zebra", "lion", "giraffe", "elephant", "hippo"],
    ["river", "mountain", "desert", "forest", "canyon"],
    ["copper", "silver", "iron", "gold", "zinc"],
    ["tulip", "rose", "daisy", "orchid", "lily"],
    ["Monday", "Friday", "Sunday", "Tuesday", "Saturday"],
]

SENTENCES_TO_COUNT = [
    "The quick brown fox jumps over the lazy dog.",
    "Reading every day makes you a better writer.",
    "Small steps lead to big changes over time.",
    "Rain is expected later this afternoon in the north.",
    "Good software is written twice and tested often.",
    "Please close the door when you leave the room.",
]


def _numbered(steps: list[str]) -> str:
    return "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1))


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {item[0].upper() + item[1:]}" for item in items)


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def items_by_category() -> dict[str, list[tuple[str, str]]]:
    """(instruction, reference answer) pairs, grouped by the kind of instruction."""
    cats: dict[str, list[tuple[str, str]]] = {}
    cats["explanation"] = [
        (EXPLAIN_FORMS[i % len(EXPLAIN_FORMS)].format(term=term), text)
        for i, (term, text) in enumerate(GLOSSARY)
    ]
    cats["how-to"] = [
        (
            HOW_FORMS[i % len(HOW_FORMS)].format(task=task),
            f"Here is how to {task}:\n\n{_numbered(steps)}",
        )
        for i, (task, steps) in enumerate(HOW_TO)
    ]
    cats["list"] = [(f"List {len(items)} {topic}.", _bullets(items)) for topic, items in LISTS]
    cats["classification"] = [
        (
            SENTIMENT_FORMS[i % 2].format(text=text),
            f"{label}. "
            + {
                "Positive": "The text expresses satisfaction or approval.",
                "Negative": "The text expresses dissatisfaction or a complaint.",
                "Neutral": "The text states a fact without expressing a feeling.",
            }[label],
        )
        for i, (text, label) in enumerate(SENTIMENT)
    ] + [
        (
            f"Is {_article(animal)} {animal} a mammal, bird, fish, reptile or amphibian?",
            f"{_article(animal).capitalize()} {animal} is {_article(kind)} {kind}.",
        )
        for animal, kind in ANIMALS
    ]
    cats["rewrite"] = [
        (f"Rewrite this message in a formal, polite tone:\n\n{text}", formal)
        for text, formal in REWRITE_FORMAL
    ] + [
        (f"Rewrite the following sentence in the past tense: {text}", past)
        for text, past in REWRITE_PAST
    ]
    cats["fact"] = [
        (f"What is the capital of {country}?", f"The capital of {country} is {city}.")
        for country, city in CAPITALS
    ] + [
        (f'Give the opposite of the word "{word}".', f'The opposite of "{word}" is "{opposite}".')
        for word, opposite in ANTONYMS
    ]
    rng = random.Random(SEED)
    conversions = []
    for big, small, factor in CONVERSIONS:
        amount = rng.choice([2, 3, 4, 5, 6, 7, 8, 9, 12, 15])
        conversions.append(
            (
                f"Convert {amount} {big} to {small}.",
                f"{amount} {big} is {amount * factor:,} {small}, because 1 {big.rstrip('s')} is "
                f"{factor:,} {small}.",
            )
        )
    cats["computation"] = (
        conversions
        + [
            (f"Sort these words alphabetically: {', '.join(words)}.", ", ".join(sorted(words)))
            for words in WORD_SETS
        ]
        + [
            (
                f'How many words are in this sentence? "{s}"',
                f"The sentence has {len(s.split())} words.",
            )
            for s in SENTENCES_TO_COUNT
        ]
    )
    return cats


def build_split() -> tuple[list[dict], list[dict]]:
    """Deal each category between train and eval with a fixed seed (eval share ~28 %)."""
    rng = random.Random(SEED)
    train: list[dict] = []
    evals: list[dict] = []
    for category, pairs in sorted(items_by_category().items()):
        order = list(range(len(pairs)))
        rng.shuffle(order)
        n_eval = round(len(pairs) * EVAL_SHARE)
        for rank, i in enumerate(order):
            instruction, output = pairs[i]
            if rank < n_eval:
                evals.append(
                    {
                        "instruction": instruction,
                        "output": output,
                        "generator": GENERATOR,
                        "dataset": DATASET,
                        "category": category,
                    }
                )
            else:
                train.append(
                    {
                        "instruction": instruction,
                        "input": "",
                        "output": output,
                        "category": category,
                    }
                )
    rng.shuffle(train)
    rng.shuffle(evals)
    for i, row in enumerate(train):
        row["id"] = f"train-{i:04d}"
    for i, row in enumerate(evals):
        row["id"] = f"eval-{i:04d}"
    return train, evals


def problems(train: list[dict], evals: list[dict]) -> list[str]:
    """What would make the split unusable: a repeated instruction (within or across splits),
    an empty field. Short answers such as "Positive." may repeat: the instructions differ."""
    found = []
    norm = [" ".join(r["instruction"].lower().split()) for r in train + evals]
    if len(set(norm)) != len(norm):
        found.append("duplicate instructions")
    for row in train + evals:
        if not row["instruction"].strip() or not row["output"].strip():
            found.append(f"{row['id']}: empty instruction or output")
    return found


def render(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped files")
    args = parser.parse_args(argv)
    train, evals = build_split()
    found = problems(train, evals)
    if found:
        print("invalid split: " + "; ".join(found), file=sys.stderr)
        return 1
    files = {
        DATA_DIR / "offline_train.jsonl": render(train),
        DATA_DIR / "offline_eval.jsonl": render(evals),
    }
    if args.check:
        stale = [
            p.name
            for p, text in files.items()
            if not p.is_file() or p.read_text(encoding="utf-8") != text
        ]
        if stale:
            print(f"out of date: {', '.join(stale)} (run without --check)", file=sys.stderr)
            return 1
        print(f"ok: {len(train)} train, {len(evals)} eval")
        return 0
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    print(f"wrote {len(train)} train and {len(evals)} eval rows to {DATA_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
