"""Generation benchmark: ``model.generate()`` of a small stock Llama (transformers' LlamaConfig,
random weights) with a static KV cache, greedy, fp16, its forward compiled with
``torch.compile(backend="spyre")``, in strict mode (SPYRE_STRICT=1: every op on the card, the
generation bookkeeping included), against the same generate() on the CPU in fp32.

    .venv/bin/python bench/generate.py [--prompt 16] [--new 16] [--hidden 256] [--layers 2]
                                       [--heads 4] [--kv-heads 2] [--ffn 512] [--vocab 1000]
                                       [--json out.json]

Reports the simulated device time (the static timing model, summed over every kernel the card
ran: ``_C.run_totals()``) of the prefill forward, of each decode forward, and of generate()'s
own bookkeeping between forwards (argmax, the EOS check, appending the token), per generated
token; the compiled forwards (prefill and decode: the count stays fixed once the cache shape
is), host wall times, and how many generated tokens equal the CPU's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import warnings

os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "1")

import torch  # noqa: E402

import torch_spyre  # noqa: E402,F401
from torch_spyre import _C, _compile  # noqa: E402


def build_model(a: argparse.Namespace) -> torch.nn.Module:
    import transformers as T

    cfg = T.LlamaConfig(vocab_size=a.vocab, hidden_size=a.hidden, num_hidden_layers=a.layers,
                        num_attention_heads=a.heads, num_key_value_heads=a.kv_heads, intermediate_size=a.ffn,
                        pad_token_id=0, bos_token_id=1, eos_token_id=2, max_position_embeddings=max(
                            256, a.prompt + a.new))
    model = T.LlamaForCausalLM(cfg)
    model.config._attn_implementation = "sdpa"
    return model.eval()


def run(a: argparse.Namespace) -> dict:
    torch.manual_seed(0)
    model = build_model(a)
    ids = torch.randint(3, a.vocab, (1, a.prompt))
    kw = dict(max_new_tokens=a.new, min_new_tokens=a.new, do_sample=False, cache_implementation="static")
    with torch.no_grad():
        t0 = time.perf_counter()
        ref = model.generate(ids, **kw)
        cpu_ms = (time.perf_counter() - t0) * 1e3

    m = model.half().to("spyre")
    graphs: list = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return _compile.spyre_backend(gm, example_inputs)

    torch._dynamo.reset()
    compiled = torch.compile(m.forward, backend=backend, dynamic=False)
    steps: list[dict] = []  # one per forward: its simulated us, the compile count after it

    def timed_forward(*args, **kwargs):
        k0, us0 = _C.run_totals()
        h0 = time.perf_counter()
        out = compiled(*args, **kwargs)
        k1, us1 = _C.run_totals()
        steps.append({"forward_us": us1 - us0, "kernels": k1 - k0, "start_us": us0, "end_us": us1,
                      "start_kernels": k0, "end_kernels": k1,
                      "host_ms": (time.perf_counter() - h0) * 1e3, "compiled": len(graphs)})
        return out

    m.forward = timed_forward
    prev = os.environ.get("SPYRE_STRICT")
    os.environ["SPYRE_STRICT"] = "1"
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the int64 -> int32 downcast notice
            _, us_start = _C.run_totals()
            t0 = time.perf_counter()
            got = m.generate(ids.to("spyre"), **kw).cpu()
            host_ms = (time.perf_counter() - t0) * 1e3
            k_end, us_end = _C.run_totals()
    finally:
        if prev is None:
            os.environ.pop("SPYRE_STRICT")
        else:
            os.environ["SPYRE_STRICT"] = prev

    # Bookkeeping of step i: from the end of forward i to the start of forward i + 1 (the last
    # step's runs to the end of generate()).
    ends = [(s["start_us"], s["start_kernels"]) for s in steps[1:]] + [(us_end, k_end)]
    book = [e - s["end_us"] for s, (e, _) in zip(steps, ends)]
    book_kernels = [k - s["end_kernels"] for s, (_, k) in zip(steps, ends)]
    decode = steps[1:]
    new = got[0, a.prompt:]
    return {
        "config": vars(a),
        "tokens_equal_cpu": int((new == ref[0, a.prompt:]).sum()),
        "new_tokens": int(new.numel()),
        "forwards": len(steps),
        "compiled_forwards": len(graphs),
        "compiled_after_first_decode": steps[1]["compiled"] if len(steps) > 1 else len(graphs),
        "prefill_forward_us": steps[0]["forward_us"],
        "prefill_kernels": steps[0]["kernels"],
        # medians: a first call's one-off work (compile-time constants) is not a decode step's
        "decode_forward_us": statistics.median(s["forward_us"] for s in decode) if decode else 0.0,
        "decode_kernels": decode[0]["kernels"] if decode else 0,
        "bookkeeping_us_per_token": statistics.median(book),
        "bookkeeping_kernels_per_token": statistics.median(book_kernels),
        "total_us": us_end - us_start,
        "simulated_us_per_token": (us_end - us_start) / len(steps),
        "decode_step_us": (statistics.median(s["forward_us"] for s in decode) + statistics.median(book[1:]))
        if decode else 0.0,
        "host_ms": host_ms,
        "host_ms_per_decode_forward_warm": statistics.median(s["host_ms"] for s in decode[1:]) if len(decode) > 1
        else 0.0,
        "cpu_generate_ms": cpu_ms,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompt", type=int, default=16)
    ap.add_argument("--new", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--ffn", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=1000)
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    r = run(a)
    print(f"llama generate(): prompt {a.prompt}, {a.new} new tokens, hidden {a.hidden}, {a.layers} layers, "
          f"{a.heads} heads / {a.kv_heads} KV heads, ffn {a.ffn}, vocab {a.vocab}; fp16, static cache, "
          f"greedy, SPYRE_STRICT=1; SENCORES={_C.sencores()}")
    print(f"compiled forwards: {r['compiled_forwards']} (after the first decode step: "
          f"{r['compiled_after_first_decode']}); forwards run: {r['forwards']}")
    print(f"tokens equal to CPU fp32 generate(): {r['tokens_equal_cpu']} / {r['new_tokens']}")
    print(f"simulated device time: prefill forward {r['prefill_forward_us']:.1f} us ({r['prefill_kernels']} "
          f"kernels); decode forward {r['decode_forward_us']:.1f} us ({r['decode_kernels']} kernels); "
          f"bookkeeping {r['bookkeeping_us_per_token']:.1f} us per token "
          f"({r['bookkeeping_kernels_per_token']:.0f} eager kernels)")
    print(f"per generated token: decode step (forward + bookkeeping) {r['decode_step_us']:.1f} us; "
          f"whole generate() {r['total_us']:.1f} us = {r['simulated_us_per_token']:.1f} us per token")
    print(f"host: generate() {r['host_ms']:.0f} ms (cold: compiles included), warm decode forward "
          f"{r['host_ms_per_decode_forward_warm']:.1f} ms; CPU fp32 generate() {r['cpu_generate_ms']:.0f} ms")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=2)


if __name__ == "__main__":
    main()
