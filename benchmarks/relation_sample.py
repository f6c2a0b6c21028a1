"""Precision of the typed relations: a seeded sample to check by hand, and its score.

Two steps, so the numbers come from a script and the judgements are plainly a person's:

    python benchmarks/relation_sample.py sample --index IDX --n 60 --seed 0 \\
        --out benchmarks/results/relation_sample_frr.json
    # a person reads each relation beside its sentence and writes, per id,
    # {"id": ..., "correct": true/false, "note": "..."} into a judgements file
    python benchmarks/relation_sample.py score --sample benchmarks/results/relation_sample_frr.json \\
        --judgements benchmarks/results/relation_judgements_frr.json

A relation is correct when its sentence states it: the source, the words of its type
and the target read as what the sentence says (a relation the sentence implies only
through a pronoun or across a clause is wrong, as is one that reverses it). ``score``
adds the precision, overall and per kind (verb, passive, copula, preposition), with a
95 % Wilson interval, to the sample file.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import arborgraph  # noqa: E402
from graphrag.lexicon import PREPOSITIONS, is_participle, relation_words  # noqa: E402
from graphrag.model import CO_OCCURS  # noqa: E402



def kind(rel_type: str) -> str:
    """Which of the extractor's patterns gives a type: verb, passive, copula,
    preposition or see_also."""
    if rel_type in PREPOSITIONS or rel_type == "see_also":
        return "preposition" if rel_type in PREPOSITIONS else "see_also"
    if rel_type in ("is_a", "part_of"):
        return "copula"
    if rel_type.startswith("is_"):
        return "passive" if is_participle(rel_type.split("_")[1]) else "copula"
    return "verb"


def sample(index: Path, n: int, seed: int) -> dict[str, Any]:
    with arborgraph.open(index) as kb:
        kg = kb.explorer.graph_view().kg
        typed = sorted((r for r in kg.relations.values() if r.type != CO_OCCURS and r.description), key=lambda r: r.id)
        picked = random.Random(seed).sample(typed, min(n, len(typed)))
        items = [
            {
                "id": r.id,
                "source": kg.entities[r.source].name,
                "type": r.type,
                "reads": f"{kg.entities[r.source].name} {relation_words(r.type)} {kg.entities[r.target].name}",
                "target": kg.entities[r.target].name,
                "kind": kind(r.type),
                "sentence": r.description,
                "chunk_id": r.evidence[0].chunk_id if r.evidence else (r.chunk_ids[0] if r.chunk_ids else ""),
            }
            for r in picked
        ]
        return {
            "index": str(index),
            "seed": seed,
            "typed_relations": len(typed),
            "relations": len(kg.relations),
            "sample": items,
        }


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return 0.0, 0.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return round(centre - half, 4), round(centre + half, 4)


def score(sample_data: dict[str, Any], judgements: list[dict[str, Any]]) -> dict[str, Any]:
    verdict = {j["id"]: bool(j["correct"]) for j in judgements}
    missing = [item["id"] for item in sample_data["sample"] if item["id"] not in verdict]
    if missing:
        raise SystemExit(f"no judgement for {len(missing)} sampled relations, e.g. {missing[0]}")
    groups: dict[str, list[bool]] = {"all": []}
    for item in sample_data["sample"]:
        ok = verdict[item["id"]]
        groups["all"].append(ok)
        groups.setdefault(item["kind"], []).append(ok)
    return {
        name: {"n": len(v), "correct": sum(v), "precision": round(sum(v) / len(v), 4), "interval95": wilson(sum(v), len(v))}
        for name, v in groups.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sample")
    s.add_argument("--index", type=Path, required=True)
    s.add_argument("--n", type=int, default=60)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("score")
    c.add_argument("--sample", type=Path, required=True)
    c.add_argument("--judgements", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "sample":
        args.out.write_text(json.dumps(sample(args.index, args.n, args.seed), indent=1, ensure_ascii=False) + "\n")
        return 0
    data = json.loads(args.sample.read_text())
    data["judged_by_hand_in"] = str(args.judgements)
    data["precision"] = score(data, json.loads(args.judgements.read_text()))
    args.sample.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps(data["precision"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
