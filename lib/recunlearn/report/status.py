"""The book's status page: which paper items exist, at which profile, on which device, at which commit."""

from __future__ import annotations

import dataclasses
import json

from ..compute.summary import page_text
from ..io import write_bytes_atomic
from .names import display_name, display_names
from .notebooks import BOOK_DIR
from .scoreboard import END_FULL_WIDTH, FULL_WIDTH, glued_texts, reduced_scale, rendered_datasets, write_scoreboard


@dataclasses.dataclass(frozen=True)
class PaperItem:
    """A table or figure of a paper, the notebook reproducing it (``<paper>/<stem>``) and its datasets."""

    paper: str
    item: str
    title: str
    notebook: str | None
    datasets: tuple[str, ...]
    issue: int


OWN_CHAPTER = "Beyond the papers"
"""The book's own questions (no paper): their claims are our hypotheses."""
CURE4REC = ("ml-100k", "ml-1m", "adm")
CASPER = ("wikipedia", "reddit", "foursquare", "lastfm")
ITEMS = [
    PaperItem("CURE4Rec", "Table 4", "Dataset statistics", "cure4rec/table-04-dataset-statistics", CURE4REC, 2),
    PaperItem("CURE4Rec", "Tables 1, 5 (Learn)", "Original models before unlearning",
              "cure4rec/learn-baselines", CURE4REC, 2),
    PaperItem("CURE4Rec", "Table 1", "WMF: completeness, utility, fairness of SCIF vs Retrain",
              "cure4rec/table-01-05-scif-completeness", CURE4REC, 4),
    PaperItem("CURE4Rec", "Table 5", "BPR: completeness, utility, fairness of SCIF vs Retrain",
              "cure4rec/table-01-05-scif-completeness", CURE4REC, 4),
    PaperItem("CURE4Rec", "Table 2", "Utility of exact unlearning", "cure4rec/table-02-eu-utility", CURE4REC, 3),
    PaperItem("CURE4Rec", "Table 3", "Unlearning time (exact methods and SCIF)", "cure4rec/table-03-unlearning-time", CURE4REC, 3),
    PaperItem("CURE4Rec", "Tables 6-8", "Active/inactive users per shard", "cure4rec/table-06-08-shard-composition", CURE4REC, 3),
    PaperItem("CURE4Rec", "Figures 2, 5", "Four-aspect overview", "cure4rec/figure-02-05-overview", CURE4REC, 4),
    PaperItem("CURE4Rec", "Figures 3, 6, 7", "A-IGF and shardGF of exact unlearning", "cure4rec/figure-03-06-07-eu-fairness", CURE4REC, 3),
    PaperItem("CURE4Rec", "Figure 4", "Number of shards", "cure4rec/figure-04-shard-number", ("ml-100k",), 3),
    PaperItem("CURE4Rec", "Figure 8", "Unlearning ratio", "cure4rec/figure-08-unlearning-ratio", ("ml-100k",), 3),
    PaperItem("CASPER", "Table 2", "Dataset statistics", "casper/table-02-dataset-statistics", CASPER, 5),
    PaperItem("CASPER", "Figure 2", "Random LOO, four models; stability by MRR group",
              "casper/figure-02-random-loo", ("foursquare",), 5),
    PaperItem("CASPER", "Figure 4", "Perturbation position (Earliest / Random / Latest); IDAG example",
              "casper/figure-04-perturbation-position", ("foursquare",), 5),
    PaperItem("CASPER", "Table 3", "Perturbation methods, Foursquare (every row, with insertion)",
              "casper/table-03-perturbation-methods", ("foursquare",), 5),
    PaperItem("CASPER", "Figure 8", "Number of perturbations; CASPER run time vs data size",
              "casper/figure-08-perturbation-count-and-runtime", ("foursquare",), 5),
    PaperItem("CASPER", "Figure 3", "Random LOO across models and datasets; next-item metrics",
              "casper/figure-03-random-loo-datasets", CASPER, 5),
    PaperItem("CASPER", "Figures 5, 6", "LatentCross: methods across datasets; stability by MRR group",
              "casper/figure-05-06-latentcross-datasets", CASPER, 5),
    PaperItem("CASPER", "Claims of §5, §7.2-7.4 (not a paper item)", "The chapter's claims at a CPU-sized scale",
              "casper/claims-reduced-scale-cpu", ("foursquare",), 5),
    PaperItem("CASPER", "Figure 7", "LatentCross: stability by MRR group for every method",
              "casper/figure-07-mrr-groups", ("foursquare",), 13),
    PaperItem("SRU", "Abstract's claims", "Inference after deletion, accuracy, efficiency, extra deletion",
              "sru/claims-abstract", ("games", "beauty", "ml-1m"), 12),
    PaperItem("SRU", "Dataset statistics (paper's table not available)", "Sessions, items, interactions, pairs evaluated",
              "sru/table-dataset-statistics", ("games", "beauty", "ml-1m"), 12),
    PaperItem("SRU", "Recommendation accuracy (paper's table not available)", "Recall, NDCG of the methods after unlearning",
              "sru/recommendation-accuracy", ("games", "beauty", "ml-1m"), 12),
    PaperItem("SRU", "Unlearning efficiency (paper's values not available)", "One shard + aggregator vs a full retrain",
              "sru/unlearning-efficiency", ("games", "beauty", "ml-1m"), 12),
    PaperItem("SRU", "Unlearning effectiveness (paper's values not available)", "HIT@K by strategy and extra deletions",
              "sru/unlearning-effectiveness", ("games", "beauty", "ml-1m"), 12),
    PaperItem("SRU", "Ablations (the chapter's own)", "Partition, centroid attention, number of shards",
              "sru/ablations", ("games",), 12),
    PaperItem(OWN_CHAPTER, "Question 1", "How far exact unlearning moves the lists of users not unlearned",
              "bystanders/q1-unlearning-moves-bystanders", ("ml-100k", "ml-1m"), 14),
    PaperItem(OWN_CHAPTER, "Question 2", "Does who is unlearned matter? Disturbance vs the deletion cascade",
              "bystanders/q2-who-is-unlearned", ("ml-100k",), 14),
    PaperItem(OWN_CHAPTER, "Question 3", "One interaction left out of the model before and after unlearning",
              "bystanders/q3-stability-after-unlearning", ("ml-100k",), 14),
    PaperItem(OWN_CHAPTER, "Question 4", "Completeness (MIO) vs bystander disturbance of the exact methods",
              "bystanders/q4-completeness-vs-disturbance", ("ml-100k",), 14),
]


def commit_label(commit: str) -> str:
    """The book's cross-reference target of a commit on this page: ``commit-<first 12 hex digits>``."""
    return f"commit-{commit[:12]}"


def _commit_text(commits: dict[str, int], fallback: str | None, listed: set[str] | None = None) -> str:
    """Commits of the records behind a page (``-dirty`` kept), the render's commit if none; a commit
    listed in the page's commit section links there."""
    shown = commits or ({fallback: 0} if fallback else {})
    listed = listed or set()

    def name(c: str) -> str:
        return f"{{ref}}`{c[:12]} <{commit_label(c)}>`" if c in listed else f"`{c[:12]}`"
    return "<br>".join(name(c) + (f" ({n})" if len(shown) > 1 else "") for c, n in shown.items())


def commit_rows(audit) -> list[dict]:
    """Per commit that made a committed record: its date and subject from git (when this clone has
    it) and the records it made, by experiment; newest first."""
    import subprocess

    from ..paths import REPO_ROOT

    rows = []
    for commit, group in audit.groupby(audit["git_commit"].fillna("unknown")):
        sha = str(commit).removesuffix("-dirty")
        shown = subprocess.run(["git", "show", "-s", "--format=%cI%x09%s", sha], cwd=REPO_ROOT, capture_output=True,
                               text=True)
        date, _, subject = shown.stdout.strip().partition("\t") if shown.returncode == 0 else ("", "", "")
        counts = group["experiment"].value_counts().sort_index()
        rows.append({"commit": str(commit), "date": date, "subject": subject or "(not in this clone)",
                     "records": int(len(group)), "by_experiment": ", ".join(f"{e} {n}" for e, n in counts.items())})
    return sorted(rows, key=lambda r: r["date"], reverse=True)


def short_subject(subject: str, limit: int = 90) -> str:
    """A commit subject of at most ``limit`` characters: cut at the last word that fits, with "…"."""
    if len(subject) <= limit:
        return subject
    return subject[:limit].rsplit(" ", 1)[0].rstrip(",;:") + " …"


def commit_section(rows: list[dict]) -> list[str]:
    """Markdown: one paragraph per commit, each a cross-reference target the tables above link to."""
    lines = ["## Commits behind the records", "",
             "Every committed run record names the commit of the code that computed it (records are made only",
             "from committed code, in a separate checkout of that commit). The full hash identifies the code in",
             "the repository (`git show <hash>`); the date and subject are git's (a long subject is cut short).", ""]
    for row in rows:
        lines += [f"({commit_label(row['commit'])})=", f"`{row['commit']}` · {row['date'][:16].replace('T', ' ')} · "
                  f"{short_subject(row['subject'])} — {row['records']} records ({row['by_experiment']})", ""]
    return lines


def item_status(item: PaperItem, listed_commits: set[str] | None = None) -> dict:
    """Status of one item from the paper-profile notebook: ``metadata.recunlearn`` (profile,
    parameters, commit, the run records behind the page) and its glued ``page_verdict``."""
    base = {"paper": item.paper, "item": item.item, "title": item.title, "verdict": "", "page": "",
            "device": "", "commit": "", "pending": "", "status": "not started"}
    path = BOOK_DIR / f"{item.notebook}.ipynb" if item.notebook else None
    if path is None or not path.is_file():
        return base
    notebook = json.loads(path.read_text())
    meta = notebook.get("metadata", {}).get("recunlearn", {})
    params = meta.get("parameters", {})
    behind = meta.get("run_records")
    computed = rendered_datasets(params, item.datasets)
    not_run = [d for d in item.datasets if d not in computed]
    scope = "; ".join(f"{name.lower()}: {', '.join(display_names(params[name]))}" for name in ("MODELS", "SEEDS")
                      if isinstance(params.get(name), list))
    settings = "full settings" if item.paper == OWN_CHAPTER else "paper settings"  # no paper behind our questions
    status = (f"{settings}: {', '.join(display_names(computed))}" + (f" ({scope})" if scope else "")
              if meta.get("profile") == "paper" else "smoke only")
    if params.get("MAX_ROWS") and meta.get("profile") == "paper":  # a deliberately reduced scale
        status = (f"reduced scale (not the paper's): first {params['MAX_ROWS']:,} rows, {params.get('EPOCHS')} epochs"
                  + (f" ({scope})" if scope else ""))
    elif params.get("MAX_SESSIONS") and reduced_scale(params, meta.get("profile")):
        status = (f"reduced scale (not the paper's): first {params['MAX_SESSIONS']:,} sessions, up to "
                  f"{params.get('MAX_EPOCHS')} epochs" + (f" ({scope})" if scope else ""))
    elif params.get("MAX_SESSIONS") and meta.get("profile") == "paper":  # statistics: whole files and a prefix
        status += f"; also the first {params['MAX_SESSIONS']:,} sessions"
    pending = []
    if behind is None:
        device, commits = "unknown (rendered before records were traced)", {}
    else:
        device = ", ".join(behind["devices"]) if behind["records"] else "no trained model"
        commits = behind["commits"]
        status += f"; {behind['records']} run record{'' if behind['records'] == 1 else 's'}"
        if behind["pending"]:
            pending.append(f"{behind['pending']} runs without a record")
    pending += [f"{display_name(d)} (not run)" for d in not_run]
    return {**base, "status": status, "page": item.notebook, "device": device,
            "commit": _commit_text(commits, meta.get("git_commit"), listed_commits), "pending": "; ".join(pending),
            "verdict": glued_texts(notebook).get("page_verdict", "")}


def audit_table(audit=None) -> list[str]:
    """Markdown rows of the record audit (counts per experiment) of ``audit`` (default: the committed records)."""
    from ..experiments.audit import audit_records, audit_summary

    summary = audit_summary(audit_records() if audit is None else audit)
    lines = ["| experiment | records | current | stale | from a dirty commit | not made by the commit it names | "
             "not strict JSON | made by this code |",
             "|---|---|---|---|---|---|---|---|"]
    for row in summary.itertuples(index=False):
        lines.append(f"| {row.experiment} | {row.records} | {row.current} | {row.stale} | {row.dirty} | "
                     f"{row.not_its_commit} | {row.not_strict} | {row.this_code} |")
    return lines


def compute_plan_status():
    """The compute plan on CPU against the committed records (:mod:`recunlearn.compute`)."""
    from ..compute.command import DEFAULT_PLAN
    from ..compute.summary import plan_status
    from ..paths import committed_records_dir

    return plan_status(DEFAULT_PLAN, committed_records_dir(), "cpu")


def plan_table(plan) -> list[str]:
    """Markdown rows of the compute plan's entries (:func:`recunlearn.compute.summary.entry_rows`), then
    the whole plan: every run once (the runs the entries compute), how many are pending and their
    CPU-hours."""
    from ..compute.summary import entry_rows

    lines = ["| entry | pages | runs listed | with a record | runs first listed here | of them pending | "
             "their CPU-hours left |",
             "|---|---|---|---|---|---|---|"]
    rows = entry_rows(plan)
    for row in rows:
        lines.append(f"| `{row['entry']}` | {row['pages']} | {row['listed']} | {row['done']} | {row['computes']} | "
                     f"{row['pending']} | {row['cpu_hours_left']:.1f} |")
    computes, pending = sum(r["computes"] for r in rows), sum(r["pending"] for r in rows)
    lines.append(f"| **the whole plan** | | | {computes - pending} | {computes} | {pending} | "
                 f"{sum(r['cpu_hours_left'] for r in rows):.1f} |")
    return lines


def render_status_page() -> str:
    """Markdown of the status page: per paper, one row per item (its page, verdict, what was computed and
    what is left, with the command); then the records behind each page, the compute plan, the record
    audit and the commits."""
    lines = ["# Status of the reproduction", "",
             "Generated by `python -m recunlearn status` from the executed paper-profile notebooks in `book/`.",
             "For each paper, every table and figure: its page and verdict, the settings it was rendered with,",
             "and what is still pending: \"runs without a record\" are runs the page needs that have not been",
             "computed yet (pending, not absent), with the CPU-hours the cost model estimates for the runs the",
             "compute plan (`grids/plan.yml`) lists for the page and the one command that computes them (an",
             "estimate is a measurement where runs of the same kind have a record, else scaled from other",
             "data, which can be far off; `compute` prints each run's time beside its estimate). These run",
             "counts are the plan's for the page, every dataset it lists included; the scoreboard counts the",
             "runs of the page as rendered, which can be fewer (a dataset the render did not ask for). Every",
             "claim and its verdict is on the [scoreboard](scoreboard.md). Below the papers: the devices and",
             "commits of the run records behind each page (`-dirty` would mark a record made from uncommitted",
             "code), the compute plan, the audit of the records and the commits themselves."]
    plan = compute_plan_status()
    from ..experiments.audit import audit_records

    audit = audit_records()
    commits = commit_rows(audit)
    listed = {row["commit"] for row in commits}
    rows = [(item, item_status(item, listed)) for item in ITEMS]
    for paper in dict.fromkeys(item.paper for item in ITEMS):
        lines += ["", f"## {paper}", "", FULL_WIDTH, "| item | verdict | computed | pending, and how to compute it |",
                  "|---|---|---|---|"]
        for item, s in rows:
            if item.paper != paper:
                continue
            named = f"{s['item']}: {s['title']}"
            link = f"[{named}]({s['page']}.ipynb)" if s["page"] else named
            left = "; ".join(t for t in (s["pending"], page_text(plan, item.notebook) if item.notebook else "") if t)
            lines.append(f"| {link} | {s['verdict']} | {s['status']} | {left or 'nothing'} |")
        lines.append(END_FULL_WIDTH)
    lines += ["", "## Records behind each page", "",
              "The device of the run records a page reads and the commits that made them (the number of records",
              "of each commit in brackets when there are several); a page without trained models names the",
              "commit it was rendered at.", "", "| item | device | commits |", "|---|---|---|"]
    for item, s in rows:
        if s["page"]:
            lines.append(f"| {item.paper} {s['item']} | {s['device']} | {s['commit']} |")
    lines += ["", "## Compute plan", "",
              "Every entry of `grids/plan.yml` in priority order, on CPU: the runs it lists and how many have a",
              "record, the runs it computes (those no earlier entry lists) and the CPU-hours left for them. A run",
              "several pages share is computed once, under the first entry that lists it: a later entry can list",
              "runs without a record and still have none pending itself; the last row counts each run of the",
              "plan once. `python -m recunlearn compute` runs the entries in this order (`--dry-run` shows how",
              "each estimate was made). `--only <entry>` computes every run the entry lists, those first listed",
              "by an earlier entry included, so a page's command is right even where its entry counts none of",
              "its own.", "",
              *plan_table(plan)]
    lines += ["", "## Run records", "",
              "`python -m recunlearn audit` checks every committed record: *current* records are the ones",
              "today's code looks up (a *stale* one was made before its experiment's results version changed);",
              "records must come from a clean commit and be strict JSON, and the commit a record names must",
              "hold the code that made it (its library-source fingerprint, recomputed from that commit's files",
              "in git). *Made by this code* counts records whose fingerprint equals this checkout's; CI",
              "re-runs a sample of the others.", ""]
    lines += audit_table(audit)
    lines += ["", *commit_section(commits)]
    return "\n".join(lines) + "\n"


def write_status_page() -> None:
    """Write book/status.md, then the scoreboard and the introduction's summary of it."""
    write_bytes_atomic(BOOK_DIR / "status.md", render_status_page().encode())
    write_scoreboard()
