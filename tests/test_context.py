"""A vLLM engine's max_model_len, sized from the longest request the audit sends it (issue 48, context.py): never
the checkpoint's declared window; a max_model_len under the longest request, or a request over the model's
window, is one line before any model loads. Counted with the embedded model's own tokenizer; no engine starts."""

from pathlib import Path

import pytest
import yaml

from radar_local.config import load_config
from radar_local.context import HEADROOM, STEP, longest_request, request_bounds
from radar_local.errors import InputError
from radar_local.resolved import resolve
from radar_local.run import Run
from tests.conftest import REPO, invoke, one_line_exit_2

QUICKSTART = REPO / "configs" / "quickstart.yaml"


def quickstart(tmp_path: Path, **changes) -> dict:
    config = yaml.safe_load(QUICKSTART.read_text())
    for role in ("generator", "verifier"):
        config[role]["options"].pop("max_model_len", None)
    config.update(changes, out=str(tmp_path / "run"))
    return config


def run_of(config: dict, tmp_path: Path) -> Run:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    return Run.create(resolve(load_config(tmp_path / "c.yaml"), REPO), tmp_path / "run")


def test_the_quickstart_is_sized_from_its_longest_request(tmp_path, embedded_model):
    """Unset, the engine's max_model_len is the longest request with a quarter of headroom, rounded up to 256;
    every response slot counts at the generator's max_new_tokens: 100 more tokens of reply raise a verdict's
    bound by 100, a pairwise verdict's (two responses) by 200. The spec's keys stay its own."""
    run = run_of(quickstart(tmp_path), tmp_path)
    verifier = run.config.verifiers[0]
    need = longest_request(run.plan, verifier)
    assert "a verdict of 'smollm2-135m'" in need.what and 400 < need.tokens < 1500
    sized = run.sized(verifier)
    assert sized.parsed.max_model_len == STEP * -(-int(need.tokens * HEADROOM) // STEP)
    assert sized.parsed.max_model_len < 8192  # the registry's window for the model: not reserved whole
    assert sized.output_identity() == verifier.output_identity() and "max_model_len" not in verifier.options
    longer = run_of(quickstart(tmp_path / "b", generation={"temperature": 0.9, "max_new_tokens": 260}), tmp_path / "b")
    assert longest_request(longer.plan, longer.config.verifiers[0]).tokens == need.tokens + 100
    pairwise = {"pairwise": {"preset": "generic", "asked": "all"}}
    short, long = (
        run_of(quickstart(tmp_path / d, **pairwise, generation={"temperature": 0.9, "max_new_tokens": m}), tmp_path / d)
        for d, m in (("p", 160), ("q", 260))
    )
    a, b = (
        [x.tokens for x in request_bounds(r.plan, r.config.verifiers[0]) if "pairwise" in x.what] for r in (short, long)
    )
    assert a and [y - x for x, y in zip(a, b)] == [200] * len(a)


def test_a_pairwise_judge_of_its_own_is_an_engine_sized_for_its_pairs(tmp_path, embedded_model):
    """`pairwise: {verifier: ...}` on an engine of its own: sized from its pairwise verdicts alone; the verifier's
    engine is sized without them."""
    from radar_local.context import engines

    critic = {"engine": "vllm", "model": "smollm2-135m", "name": "critic", "options": {"enforce_eager": False}}
    run = run_of(quickstart(tmp_path, pairwise={"preset": "generic", "verifier": critic}), tmp_path)
    assert [m.label for m in engines(run.config)] == ["smollm2-135m", "critic"]
    own = request_bounds(run.plan, run.config.pairwise.verifier)
    assert own and all(b.what == "a pairwise verdict of 'critic'" for b in own)
    assert not any("pairwise" in b.what for b in request_bounds(run.plan, run.config.verifiers[0]))


def test_a_max_model_len_under_the_longest_request_is_one_line(tmp_path, embedded_model):
    config = quickstart(tmp_path)
    config["verifier"]["options"]["max_model_len"] = 512
    run = run_of(config, tmp_path)
    with pytest.raises(InputError, match=r"smollm2-135m: max_model_len 512 is under the \d+ tokens its longest"):
        run.sized(run.config.generator)  # every engine checked before the first loads
    (tmp_path / "again.yaml").write_text(yaml.safe_dump({**config, "out": str(tmp_path / "again")}))
    one_line_exit_2(invoke("audit", tmp_path / "again.yaml", "--quiet"), "max_model_len 512", "leave it unset")


def test_a_request_over_the_models_window_is_one_line(tmp_path, embedded_model):
    run = run_of(quickstart(tmp_path, generation={"temperature": 0.9, "max_new_tokens": 8000}), tmp_path)
    with pytest.raises(InputError, match="more than the model's window of 8192; lower generation.max_new_tokens"):
        run.sized(run.config.verifiers[0])


def test_a_model_without_a_tokenizer_is_one_line(tmp_path, embedded_model):
    """Sizing reads the model's tokenizer: weights without one are one line naming the model, before it loads."""
    import shutil

    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(embedded_model / "config.json", bare / "config.json")
    config = quickstart(tmp_path)
    config["verifier"]["model"] = str(bare)
    run = run_of(config, tmp_path)
    with pytest.raises(InputError, match="bare: cannot read its tokenizer at"):
        run.sized(run.config.generator)


def test_what_sizing_missed_is_counted(tmp_path, embedded_model):
    """Issue 60 item 7: a judge is sized from the stored probes it will be asked, in its own tokenizer (a probe as
    long as max_new_tokens in the generator's tokenizer was 2.16x as many of tekken's on Chinese text); a thinking
    judge's pairwise verdicts count its reasoning budget; the team's labelled pairs are counted."""
    from transformers import AutoTokenizer

    from radar_local.records import ProbeRecord

    run = run_of(quickstart(tmp_path), tmp_path)
    verifier = run.config.verifiers[0]
    task = run.plan.tasks[0].id
    text = "退款已经处理完毕，请查收您的账户。" * 40  # many tokens a character in this tokenizer
    tokens = len(AutoTokenizer.from_pretrained(embedded_model)(text, add_special_tokens=False)["input_ids"])
    probe = ProbeRecord(key="p", generator="g", task_id=task, target="helpfulness", direction="+", variant=0, text=text)
    what = f"a verdict of 'smollm2-135m' on task '{task}'"
    before = {b.what: b.tokens for b in request_bounds(run.plan, verifier)}
    after = {b.what: b.tokens for b in request_bounds(run.plan, verifier, probes=[probe])}
    reply = run.config.generation.max_new_tokens
    assert tokens > reply and after[what] - before[what] == tokens - reply
    thinking = {"template": "{{ prompt }} {{ response }} {{ criterion.label }}", "reasoning": {"budget": 300}}
    plain, thinks = (
        run_of(quickstart(tmp_path / d, pairwise={"preset": "generic", "asked": "all"}, verifier={
            **quickstart(tmp_path)["verifier"], **({"judge": thinking} if d == "t" else {})}), tmp_path / d)
        for d in ("p", "t")
    )  # fmt: skip
    pairs = [
        max(b.tokens for b in request_bounds(r.plan, r.config.verifiers[0]) if "pairwise" in b.what)
        for r in (plain, thinks)
    ]
    assert pairs[1] - pairs[0] >= 300
    labels = tmp_path / "pairs.csv"
    labels.write_text(f"task_id,response_a,response_b,criterion,preferred\n{task},{text},A short one.,overall,B\n")
    labelled = run_of(quickstart(tmp_path / "l", pairwise={"preset": "generic"}, labels=str(labels)), tmp_path / "l")
    bounds = request_bounds(labelled.plan, labelled.config.verifiers[0], labelled.labels)
    found = [b for b in bounds if "labelled" in b.what]
    assert found and max(b.tokens for b in found) > tokens


def test_a_judge_that_loads_after_the_probes_is_sized_from_them(tmp_path, embedded_model):
    """Run.sized: an engine of the judge's own, loaded after generation, is sized from the stored probes in its
    own tokenizer (never below its first sizing, which later waves may need); the generator's engine is not."""
    from radar_local.records import ProbeRecord

    config = quickstart(tmp_path)
    config["verifier"]["options"] = {"enforce_eager": False}  # another engine than the generator's
    run = run_of(config, tmp_path)
    verifier, generator = run.config.verifiers[0], run.config.generator
    first, own = run.sized(verifier).parsed.max_model_len, run.sized(generator).parsed.max_model_len
    text = "退款已经处理完毕，请查收您的账户。" * 60
    g = run.plan.generation_requests()[0]  # a planned probe: the ones a judge is asked
    run.store.add_probes([ProbeRecord(key=f"{g.key}:0", generator=generator.label, task_id=g.task.id, target=g.target,
                                      direction=g.direction, variant=0, text=text)])  # fmt: skip
    assert run.sized(verifier).parsed.max_model_len > first
    assert run.sized(generator).parsed.max_model_len == own  # sized before any probe, as it loads


@pytest.mark.thorough  # a second tokenizer path through sizing (vLLM's own for a Mistral folder): 3 s of imports
def test_a_mistral_format_judge_is_sized_and_keyed_by_what_vllm_renders_with(tmp_path, embedded_model):
    """Issue 60 item 1: in a folder with consolidated weights and a Mistral tokenizer file vLLM renders with its
    MistralTokenizer, while radar sized the judge, digested its template and checked expected mode with the folder's
    tokenizer.json. Each now reads vLLM's (mistral_common's v3 tokenizer beside SmolLM2's files): the bounds are
    its ids (mistral_common's [INST] turns, not SmolLM2's), and a changed Mistral file is another judge's key."""
    import shutil

    mistral_common = pytest.importorskip("mistral_common")
    from radar_local.engines.base import prompt_token_ids
    from radar_local.engines.registry import score_token_problem
    from radar_local.models import local_tokenizer, weights_identity

    folder = tmp_path / "mistral"
    shutil.copytree(embedded_model, folder)
    (folder / "radar_fetch.json").unlink()
    (folder / "consolidated.safetensors").write_bytes(b"")
    data = Path(mistral_common.__file__).parent / "data"
    shutil.copy(data / "mistral_instruct_tokenizer_240323.model.v3", folder / "tokenizer.model.v3")
    served = local_tokenizer(folder, "vllm")
    assert getattr(served, "IS_MISTRAL_TOKENIZER", False)
    assert not getattr(local_tokenizer(folder, "transformers"), "IS_MISTRAL_TOKENIZER", False)
    config = quickstart(tmp_path)
    config["verifier"]["model"] = str(folder)
    run = run_of(config, tmp_path)
    mine = {b.what: b.tokens for b in request_bounds(run.plan, run.config.verifiers[0]) if "a verdict of" in b.what}
    config["verifier"]["model"] = "smollm2-135m"
    smol_run = run_of(config, tmp_path / "s")
    smols = {b.what: b.tokens for b in request_bounds(smol_run.plan, smol_run.config.verifiers[0])}
    assert mine and all(mine[w] != smols[w.replace(f"'{folder.name}'", "'smollm2-135m'")] for w in mine)
    asked = [{"role": "user", "content": "Rate it."}]
    assert prompt_token_ids(served, asked)[:2] == [served.bos_token_id, 3]  # <s>[INST] as two ids
    smol = local_tokenizer(embedded_model, "vllm")
    assert len(prompt_token_ids(served, asked)) != len(prompt_token_ids(smol, asked))
    # expected mode's one-token levels, checked in the tokenizer the engine applies: sentencepiece's v3 splits "1"
    assert "splits the level(s) 1, 2, 3" in (score_token_problem("vllm", str(folder), [("1", "2", "3")]) or "")
    assert score_token_problem("transformers", str(folder), [("1", "2", "3")]) is None  # SmolLM2's tokenizer.json
    key = weights_identity(str(folder), template=True)
    shutil.copy(data / "tokenizer.model.v1", folder / "tokenizer.model.v3")
    assert weights_identity(str(folder), template=True) != key


def test_an_attacked_judge_is_sized_for_the_longest_insertion_too(tmp_path, embedded_model):
    """Issue 64: an attacked probe is its base and one insertion; a judge's verdict bound counts the longest
    insertion an attack adds, in its own tokenizer (else a delimiter escape of a long template could pass the
    window the engine was sized for)."""
    from radar_local.attack_probes import INSTRUCTION, SYSTEM_NOTE
    from radar_local.models import local_tokenizer
    from radar_local.models import resolve as model_path

    plain = run_of(quickstart(tmp_path / "a"), tmp_path / "a")
    attacked = run_of(quickstart(tmp_path / "b", attacks={"kinds": ["instruction", "system_note"]}), tmp_path / "b")
    before, after = (
        {b.what.removesuffix(" (an attacked probe)"): b.tokens for b in request_bounds(r.plan, r.config.verifiers[0])}
        for r in (plain, attacked)
    )
    tokenizer = local_tokenizer(model_path("smollm2-135m")[0], "vllm")
    most = max(len(tokenizer.encode(f"\n\n{t}", add_special_tokens=False)) for t in (INSTRUCTION, SYSTEM_NOTE))
    verdicts = [w for w in before if w.startswith("a verdict of")]
    assert verdicts and all(after[w] - before[w] == most for w in verdicts)
    assert all(after[w] == before[w] for w in before if w not in verdicts)  # the generator's probe: as it was
