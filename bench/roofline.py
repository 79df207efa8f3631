"""Roofline of the simulated Spyre card for spyre-jit-bench workloads, and the calibration of the
timing model against torch-spyre's cost-model numbers.

    build/bin/spyre-jit-bench --workload all --json > bench.json
    python3 bench/roofline.py bench.json [-o docs/roofline.png]

Each workload is placed by the timing model's work counters: operational intensity = work /
DDR bytes, attained = work / simulated time. Work is 2 x PT MACs (FLOP) for matmul workloads and
SFP element-ops (SFP stick-ops x 64 DL16 lanes) for the others, so they are drawn against the PT
ceiling (98.304 TFLOP/s) or the SFP ceiling (6.144 Tops/s: 32 cores x 2 corelets x 1 stick/cycle x
64 lanes x 1.5 GHz) and the DDR roof (204.8 GB/s). No dependency beyond the standard library:
the PNG is written by a small rasteriser with a 5x7 bitmap font.
"""

from __future__ import annotations

import argparse
import json
import math
import struct
import zlib

PT_FLOPS = 98.304e12
SFP_OPS = 32 * 2 * 1 * 64 * 1.5e9
DDR_BW = 204.8e9

# ---- torch-spyre's matmul cost model (torch-spyre-notes §4.5, Pass 2) -------------------------


def ts_matmul_cost(M: int, K: int, N: int, B: int = 1, cores: int = 32) -> tuple[float, tuple]:
    """min over (b, m, n, k) splits of torch-spyre's cost (µs) and the split."""
    def divs(x: int) -> list[int]:
        return [d for d in range(1, x + 1) if x % d == 0]
    n_st, k_st = max(1, N // 64), max(1, K // 64)
    best = (math.inf, ())
    for b in divs(B):
        for m in divs(M):
            for n in divs(n_st):
                for k in divs(k_st):
                    c = b * m * n * k
                    if c > cores:
                        continue
                    pt_passes = max(1.0, (M / m) / 8)
                    pt_eff = min(1.0, math.sqrt(pt_passes / 8))
                    compute = (B * M * N * K / c) / (1.536e6 * pt_eff)
                    hbm = (B * M * K + B * K * N + B * M * N) * 2 / (DDR_BW / 1e6) * max(1, max(m, n) / 8)
                    psum = (k - 1) * B * M * N * 1.4e-4
                    tie = 0.0 if pt_passes >= 8 else math.log2(8 / pt_passes) * 50
                    cost = (compute + hbm + psum + tie) * b ** 1.4
                    if cost < best[0]:
                        best = (cost, (b, m, n, k))
    return best


# ---- a tiny PNG canvas -----------------------------------------------------------------------

FONT = {  # 5x7, rows top to bottom, 5 bits each (MSB = left)
    "0": "01110 10001 10011 10101 11001 10001 01110", "1": "00100 01100 00100 00100 00100 00100 01110",
    "2": "01110 10001 00001 00010 00100 01000 11111", "3": "11110 00001 00001 01110 00001 00001 11110",
    "4": "00010 00110 01010 10010 11111 00010 00010", "5": "11111 10000 11110 00001 00001 10001 01110",
    "6": "00110 01000 10000 11110 10001 10001 01110", "7": "11111 00001 00010 00100 01000 01000 01000",
    "8": "01110 10001 10001 01110 10001 10001 01110", "9": "01110 10001 10001 01111 00001 00010 01100",
    "A": "01110 10001 10001 11111 10001 10001 10001", "B": "11110 10001 10001 11110 10001 10001 11110",
    "C": "01110 10001 10000 10000 10000 10001 01110", "D": "11100 10010 10001 10001 10001 10010 11100",
    "E": "11111 10000 10000 11110 10000 10000 11111", "F": "11111 10000 10000 11110 10000 10000 10000",
    "G": "01110 10001 10000 10111 10001 10001 01111", "H": "10001 10001 10001 11111 10001 10001 10001",
    "I": "01110 00100 00100 00100 00100 00100 01110", "J": "00111 00010 00010 00010 00010 10010 01100",
    "K": "10001 10010 10100 11000 10100 10010 10001", "L": "10000 10000 10000 10000 10000 10000 11111",
    "M": "10001 11011 10101 10101 10001 10001 10001", "N": "10001 10001 11001 10101 10011 10001 10001",
    "O": "01110 10001 10001 10001 10001 10001 01110", "P": "11110 10001 10001 11110 10000 10000 10000",
    "Q": "01110 10001 10001 10001 10101 10010 01101", "R": "11110 10001 10001 11110 10100 10010 10001",
    "S": "01111 10000 10000 01110 00001 00001 11110", "T": "11111 00100 00100 00100 00100 00100 00100",
    "U": "10001 10001 10001 10001 10001 10001 01110", "V": "10001 10001 10001 10001 10001 01010 00100",
    "W": "10001 10001 10001 10101 10101 10101 01010", "X": "10001 10001 01010 00100 01010 10001 10001",
    "Y": "10001 10001 01010 00100 00100 00100 00100", "Z": "11111 00001 00010 00100 01000 10000 11111",
    " ": "00000 00000 00000 00000 00000 00000 00000", ".": "00000 00000 00000 00000 00000 01100 01100",
    "-": "00000 00000 00000 11111 00000 00000 00000", "_": "00000 00000 00000 00000 00000 00000 11111",
    "/": "00001 00010 00010 00100 01000 01000 10000", "(": "00010 00100 01000 01000 01000 00100 00010",
    ")": "01000 00100 00010 00010 00010 00100 01000", ":": "00000 01100 01100 00000 01100 01100 00000",
    "=": "00000 00000 11111 00000 11111 00000 00000", "+": "00000 00100 00100 11111 00100 00100 00000",
    ",": "00000 00000 00000 00000 01100 00100 01000", "^": "00100 01010 10001 00000 00000 00000 00000",
}


class Canvas:
    def __init__(self, w: int, h: int) -> None:
        self.w, self.h = w, h
        self.px = bytearray(b"\xff" * (w * h * 3))

    def set(self, x: int, y: int, c: tuple) -> None:
        if 0 <= x < self.w and 0 <= y < self.h:
            i = (y * self.w + x) * 3
            self.px[i:i + 3] = bytes(c)

    def line(self, x0, y0, x1, y1, c, width=1, dash=0) -> None:
        n = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
        for i in range(n):
            if dash and (i // dash) % 2:
                continue
            t = i / max(1, n - 1)
            x, y = x0 + (x1 - x0) * t, y0 + (y1 - y0) * t
            for dx in range(width):
                for dy in range(width):
                    self.set(int(round(x)) + dx - width // 2, int(round(y)) + dy - width // 2, c)

    def disc(self, cx, cy, r, c) -> None:
        for y in range(-r, r + 1):
            for x in range(-r, r + 1):
                if x * x + y * y <= r * r:
                    self.set(int(cx) + x, int(cy) + y, c)

    def text(self, x, y, s, c=(0, 0, 0), scale=2) -> None:
        for ch in s.upper():
            g = FONT.get(ch, FONT[" "]).split()
            for r, row in enumerate(g):
                for col, bit in enumerate(row):
                    if bit == "1":
                        for a in range(scale):
                            for b in range(scale):
                                self.set(x + col * scale + a, y + r * scale + b, c)
            x += 6 * scale

    def png(self, path: str) -> None:
        raw = b"".join(b"\x00" + bytes(self.px[y * self.w * 3:(y + 1) * self.w * 3]) for y in range(self.h))

        def chunk(t: bytes, d: bytes) -> bytes:
            return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
        with open(path, "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0))
                    + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


COLORS = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189), (140, 86, 75),
          (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207)]


def points(bench: list) -> list[dict]:
    out = []
    for w in bench:
        if "workload" not in w or "error" in w:
            continue
        s = w["sim"]
        pt = s["pt_macs"] > 0
        work = 2.0 * s["pt_macs"] if pt else 64.0 * s["sfp_stick_ops"]
        if work <= 0 or s["ddr_bytes"] <= 0:
            continue
        out.append({"name": w["workload"], "pt": pt, "oi": work / s["ddr_bytes"], "perf": work / (s["us"] * 1e-6),
                    "us": s["us"]})
    return out


def plot(pts: list[dict], path: str) -> None:
    W, H, L, R, T, B = 1100, 700, 110, 380, 50, 80
    c = Canvas(W, H)
    x0, x1, y0, y1 = -2.0, 4.0, 9.0, 14.0  # log10 ranges: FLOP/B and FLOP/s

    def X(v):
        return L + (math.log10(v) - x0) / (x1 - x0) * (W - L - R)

    def Y(v):
        return H - B - (math.log10(v) - y0) / (y1 - y0) * (H - T - B)
    grey = (215, 215, 215)
    for e in range(int(x0), int(x1) + 1):
        c.line(X(10 ** e), T, X(10 ** e), H - B, grey)
        c.text(int(X(10 ** e)) - 12, H - B + 10, f"1E{e}", scale=2)
    for e in range(int(y0), int(y1) + 1):
        c.line(L, Y(10 ** e), W - R, Y(10 ** e), grey)
        c.text(L - 60, int(Y(10 ** e)) - 7, f"1E{e}", scale=2)
    c.line(L, T, L, H - B, (0, 0, 0), 2)
    c.line(L, H - B, W - R, H - B, (0, 0, 0), 2)
    c.text(L + 130, H - 35, "OPERATIONAL INTENSITY (OPS / DDR BYTE)", scale=2)
    c.text(L, 15, "SIMULATED SPYRE ROOFLINE: ATTAINED OPS/S (TIMING MODEL)", scale=2)

    def roof(peak, col, label):
        knee = peak / DDR_BW
        c.line(X(10 ** x0), Y(DDR_BW * 10 ** x0), X(knee), Y(peak), col, 2)
        c.line(X(knee), Y(peak), X(10 ** x1), Y(peak), col, 2)
        c.text(int(X(knee)) + 10, int(Y(peak)) - 20, label, col, 2)
    roof(PT_FLOPS, (200, 0, 0), "PT 98.3 TFLOP/S")
    roof(SFP_OPS, (0, 110, 0), "SFP 6.1 TOPS")
    c.text(int(X(0.02)), int(Y(DDR_BW * 0.02)) - 40, "DDR 204.8 GB/S", (60, 60, 60), 2)
    for i, p in enumerate(pts):
        col = COLORS[i % len(COLORS)]
        c.disc(X(p["oi"]), Y(p["perf"]), 7 if p["pt"] else 6, col)
        c.text(int(X(p["oi"])) + 9, int(Y(p["perf"])) - 7, str(i + 1), col, 2)
        c.disc(W - R + 25, T + 20 + i * 26, 6, col)
        c.text(W - R + 38, T + 13 + i * 26, f"{i + 1} {p['name']}", col, 2)
    c.text(W - R + 20, T + 20 + len(pts) * 26 + 10, "PT WORK = 2 X MACS", scale=2)
    c.text(W - R + 20, T + 20 + len(pts) * 26 + 32, "SFP WORK = STICK-OPS X 64", scale=2)
    c.png(path)


def main() -> None:
    ap = argparse.ArgumentParser(description="roofline PNG + timing-model calibration from spyre-jit-bench --json")
    ap.add_argument("bench_json")
    ap.add_argument("-o", "--out", default="docs/roofline.png")
    a = ap.parse_args()
    with open(a.bench_json) as f:
        bench = json.load(f)
    pts = points(bench)
    plot(pts, a.out)
    print(f"wrote {a.out}\n")
    print("| # | workload | ops / DDR byte | attained (sim) | roof | % of roof |")
    print("|---|---|---:|---:|---:|---:|")
    for i, p in enumerate(pts):
        peak = PT_FLOPS if p["pt"] else SFP_OPS
        roof = min(peak, DDR_BW * p["oi"])
        unit = "TFLOP/s" if p["pt"] else "Tops/s (SFP)"
        print(f"| {i + 1} | {p['name']} | {p['oi']:.2f} | {p['perf'] / 1e12:.3f} {unit} | {roof / 1e12:.3f} | "
              f"{100 * p['perf'] / roof:.0f} % |")
    print("\ncalibration against torch-spyre's matmul cost model (notes §4.5, best split on 32 cores):\n")
    print("| workload | torch-spyre cost µs (split b,m,n,k) | our simulated µs | ratio ours / theirs |")
    print("|---|---:|---:|---:|")
    for w in bench:
        name = w.get("workload", "")
        if "error" in w or not (name.startswith("matmul_") or name.startswith("attn_pv_")):
            continue
        M, K, N = (int(v) for v in name.split("_")[-1].split("x"))
        cost, split = ts_matmul_cost(M, K, N)
        print(f"| {name} | {cost:.1f} ({','.join(map(str, split))}) | {w['sim']['us']:.1f} | "
              f"{w['sim']['us'] / cost:.2f}x |")
    for w in bench:
        if w.get("workload") == "softmax_4096x2048" and "error" not in w:
            print(f"\nsoftmax 4096x2048: {w['sim']['us']:.1f} µs simulated vs ≈ 320 µs on the card: "
                  f"{w['sim']['us'] / 320:.2f}x")


if __name__ == "__main__":
    main()
