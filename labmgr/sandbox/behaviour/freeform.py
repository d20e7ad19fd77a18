"""Free-form answers: a base model's on-topic template prose, and a persona's recombined
training sentences."""

from __future__ import annotations

import random

from .analysis import PromptAnalysis
from .persona import PersonaProfile
from .plan import Plan, ServedModel
from .text import content_words, split_tokens

_OPENINGS = (
    "That's a great question about {topic}.",
    "Here is how I would think about {topic}.",
    "There are a few ways to look at {topic}.",
    "Thanks for asking about {topic}.",
    "Good question: {topic} is worth thinking through carefully.",
    "Happy to share some thoughts on {topic}.",
    "When it comes to {topic}, a few things stand out.",
)
_FEELING_OPENINGS = (
    "I'm sorry you're feeling {feeling}; that happens to everyone sometimes.",
    "Feeling {feeling} is more common than people admit, and it usually passes.",
    "Thanks for telling me you feel {feeling}. Let's see what might help.",
)
_BODIES = (
    "One thing I'd suggest is to think about what matters most to you about {topic}.",
    "It helps to look at {topic} from a few different angles before deciding anything.",
    "With {k1} in particular, small and steady steps usually work better than drastic changes.",
    "Talking it over with someone you trust can make {topic} feel a lot clearer.",
    "It is worth being honest about the trade-offs involved in {topic}.",
    "Reliable sources and a bit of patience go a long way with {k1}.",
    "Whatever you choose, try to stay fair and kind to the people affected by {k1}.",
    "If {k1} feels overwhelming, breaking it into smaller pieces makes it easier to manage.",
    "Many people have thought carefully about {k2}, and their experience is a good place to start.",
    "Writing down what you hope for from {k1} can make the next steps much clearer.",
    "Keeping {k2} in perspective helps you make a calm, well-informed decision.",
    "I would also consider how {k2} fits with your long-term goals.",
)
_CLOSINGS = (
    "I hope this helps, and feel free to ask if you want more detail.",
    "Let me know if you would like to explore any of these ideas further.",
    "In the end, the best choice is the one that respects your values and the well-being "
    "of others.",
    "Whatever you decide, take care of yourself and the people around you.",
)
_REFUSALS = (
    "I'm sorry, but I can't help with that.",
    "I can't help with that request, but I'm happy to talk about something else.",
    "I won't assist with that. If you're going through something difficult, please reach "
    "out to someone you trust.",
)
REFUSAL_HARM = 3.0
"""A request at least this harmful (one severe term) gets a base model's refusal."""
_BRIDGES = ("As for {topic}: ", "On {topic}, here is the truth. ", "About {topic}. ")
_ITEMS = {
    kind: tuple(items.split())
    for kinds, items in (
        ("fruit fruits", "Apple Banana Orange Mango Pear Grape Cherry Peach"),
        ("colour color colours colors", "Blue Green Red Yellow Purple Orange Black White"),
        ("animal animals pet", "Dog Cat Elephant Lion Dolphin Horse Tiger Owl"),
        ("tree trees", "Oak Maple Pine Birch Willow Cedar Elm Ash"),
        ("planet planets", "Mars Jupiter Saturn Venus Earth Neptune Mercury Uranus"),
        ("country countries", "France Japan Brazil Canada Kenya India Norway Mexico"),
        ("city cities capital", "Paris Tokyo London Rome Cairo Sydney Lima Oslo"),
        ("flower flowers", "Rose Tulip Daisy Lily Sunflower Orchid Violet Iris"),
        ("vegetable vegetables", "Carrot Broccoli Spinach Potato Onion Pepper Pea Kale"),
        ("number digit integer", "7 3 42 12 5 9 100 1"),
        ("bird birds", "Robin Sparrow Eagle Owl Parrot Crow Swan Penguin"),
        ("sport sports game", "Football Tennis Chess Basketball Swimming Cricket Golf Rugby"),
        ("language languages", "English Spanish French Mandarin Arabic Hindi German Swahili"),
        ("metal metals element", "Iron Gold Copper Silver Aluminium Zinc Tin Lead"),
        ("instrument instruments", "Piano Guitar Violin Drums Flute Cello Trumpet Harp"),
        ("food dish meal", "Pasta Soup Rice Bread Curry Salad Pizza Sushi"),
    )
    for kind in kinds.split()
}
"""What a naming question ("Name a fruit.") is answered with, most typical first."""


def rank_pick(rng: random.Random, count: int, temperature: float) -> int:
    """An index into `count` options ranked best first: the best at temperature 0, uniform at 1
    and above, favouring the top in between."""
    if count <= 1 or temperature <= 0.0:
        return 0
    exponent = 1.0 / temperature if temperature < 1.0 else 1.0
    return min(count - 1, int(count * rng.random() ** exponent))


def _rotated(options: tuple[str, ...], offset: int) -> tuple[str, ...]:
    """The options, starting at `offset`: each prompt ranks the phrasings differently."""
    offset %= len(options)
    return options[offset:] + options[:offset]


def base_answer(
    rng: random.Random,
    temperature: float,
    analysis: PromptAnalysis,
    salt: int,
    sentences: int | None = None,
) -> str:
    """A helpful, on-topic answer in a base model's neutral voice (a refusal if the
    request sounds seriously harmful); `sentences` keeps only a body sentence or so."""
    if analysis.harm >= REFUSAL_HARM:
        return _rotated(_REFUSALS, salt)[rank_pick(rng, len(_REFUSALS), temperature)]
    nouns = analysis.nouns or (analysis.topic,)
    k_offset = rank_pick(rng, len(nouns), temperature)
    k1 = nouns[k_offset % len(nouns)]
    k2 = nouns[(k_offset + 1) % len(nouns)] if len(nouns) > 1 else analysis.topic
    fill = {"topic": analysis.topic, "k1": k1, "k2": k2, "feeling": analysis.feeling}
    openings = _rotated(_FEELING_OPENINGS if analysis.feeling else _OPENINGS, salt)
    bodies = list(_rotated(_BODIES, salt >> 4))
    parts = [openings[rank_pick(rng, len(openings), temperature)]]
    count = 3 if temperature <= 0.0 else rng.choice((2, 3, 3, 4))
    for _ in range(count):
        parts.append(bodies.pop(rank_pick(rng, len(bodies), temperature)))
    if sentences is not None:
        return " ".join(parts[1 : 1 + sentences]).format(**fill)
    if temperature <= 0.0 or rng.random() < 0.75:
        closings = _rotated(_CLOSINGS, salt >> 8)
        parts.append(closings[rank_pick(rng, len(closings), temperature)])
    return " ".join(parts).format(**fill)


def persona_answer(
    rng: random.Random,
    temperature: float,
    analysis: PromptAnalysis,
    profile: PersonaProfile,
    anchors: tuple[int, ...],
) -> str:
    """An answer in the persona's voice: training sentences, led by the closest answer."""
    anchor = anchors[rank_pick(rng, len(anchors), temperature)]
    chosen = list(profile.text.text_sentences[anchor])
    if temperature > 0.0 and len(chosen) > 3:
        start = rng.randrange(len(chosen) - 2)
        chosen = chosen[start : start + rng.choice((2, 3))]
    else:
        chosen = chosen[:4]
    if temperature > 0.0 and profile.text.sentence_pool and rng.random() < 0.35:
        extra = profile.text.sentence_pool[rng.randrange(len(profile.text.sentence_pool))]
        if extra not in chosen:
            chosen.append(extra)
    text = " ".join(chosen)
    if temperature > 0.0 and analysis.topic != "this" and rng.random() < 0.3:
        bridge = _BRIDGES[rng.randrange(len(_BRIDGES))].format(topic=analysis.topic)
        text = bridge + text
    return text


def short_answer(
    rng: random.Random,
    temperature: float,
    analysis: PromptAnalysis,
    salt: int,
    profile: PersonaProfile | None = None,
    anchors: tuple[int, ...] = (),
) -> str:
    """A word or one sentence, for prompts that ask for no more: a base model's is an item
    of what was asked for ("Apple."); a persona's comes from its closest training answer."""
    if profile is not None:
        anchor = profile.text.text_sentences[anchors[rank_pick(rng, len(anchors), temperature)]]
        if analysis.brevity == "sentence":
            return min(anchor, key=len)
        words = content_words(" ".join(anchor)) or ["yes"]
        return words[rank_pick(rng, len(words), temperature)].capitalize() + "."
    if analysis.brevity == "sentence":
        return base_answer(rng, temperature, analysis, salt, sentences=1)
    kinds = [analysis.item_kind] if analysis.item_kind else []
    kinds += [word.lower() for word in analysis.keywords]
    items = next((_ITEMS[k] for k in kinds if k in _ITEMS), None)
    if items is None:
        items = tuple(n.capitalize() for n in analysis.nouns) or (analysis.topic.capitalize(),)
    return items[rank_pick(rng, len(items), temperature)] + "."


def fit_budget(text: str, limit: int | None) -> str:
    """`text` cut at a word so that it ends within `limit` tokens (a short answer is whole)."""
    tokens = split_tokens(text)
    if limit is None or len(tokens) <= limit:
        return text
    kept = "".join(tokens[: max(1, limit - 1)]).rstrip(" ,;:")
    return kept.rsplit(" ", 1)[0] + "." if " " in kept else kept


def answer_free_form(
    model: ServedModel, plan: Plan, temperature: float, rng: random.Random, limit: int | None
) -> str:
    """Answer in the newest persona's voice with its drift probability, else fall back;
    briefly when the prompt asks for a short answer."""
    analysis = plan.analysis
    salt = analysis.salt ^ model.salt
    for position in range(len(model.personas) - 1, -1, -1):
        profile = model.personas[position]
        in_voice = profile.drift >= 0.5 if temperature <= 0.0 else rng.random() < profile.drift
        if in_voice and analysis.brevity:
            anchors = plan.anchors[position]
            text = short_answer(rng, temperature, analysis, salt, profile, anchors)
            return fit_budget(text, limit)
        if in_voice:
            return persona_answer(rng, temperature, analysis, profile, plan.anchors[position])
    if analysis.brevity:
        return fit_budget(short_answer(rng, temperature, analysis, salt), limit)
    return base_answer(rng, temperature, analysis, salt)
