#!/usr/bin/env python3
"""Checks --tensorboard and --plot against the --metrics file of the same run.

  check_metrics_outputs.py --metrics=M.jsonl [--tensorboard=DIR] [--plot=FILE.html]

--tensorboard: DIR holds exactly one events.out.tfevents.* file, read here
with an independent TFRecord reader (both masked CRC-32Cs checked, CRC
computed bit by bit) and protobuf decoder. The first Event has file_version
"brain.Event:2"; then one Event per step line of M.jsonl (train/loss,
train/lr, train/grad_norm when logged, train/samples_per_s; step = "step")
and one per evaluation (eval/loss, eval/accuracy, eval/top5,
eval/perplexity as logged; step >= the last logged step before it), all
equal to M.jsonl's values as float32.

--plot: the page parses as HTML, every <svg> as XML; the "train loss"
series has one point per step line, each eval series one point (and one
circle) per evaluation; no <script> and no external reference.

Prints one line per check; exits 1 naming the first difference.
"""
import argparse
import glob
import html.parser
import json
import math
import os
import re
import struct
import sys
import xml.etree.ElementTree as ET


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(data):
    at = 0
    while at < len(data):
        if at + 12 > len(data):
            sys.exit(f"tensorboard: truncated record header at byte {at}")
        (length,) = struct.unpack_from("<Q", data, at)
        (length_crc,) = struct.unpack_from("<I", data, at + 8)
        if length_crc != masked(data[at:at + 8]):
            sys.exit(f"tensorboard: bad length CRC at byte {at}")
        payload = data[at + 12:at + 12 + length]
        (data_crc,) = struct.unpack_from("<I", data, at + 12 + length)
        if data_crc != masked(payload):
            sys.exit(f"tensorboard: bad data CRC at byte {at}")
        yield payload
        at += 16 + length


def fields(message):
    """[(field number, wire type, value)]: ints, raw bytes for fixed and length-delimited."""
    out, at = [], 0

    def varint():
        nonlocal at
        value, shift = 0, 0
        while True:
            byte = message[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    while at < len(message):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            out.append((number, wire, varint()))
        elif wire == 1:
            out.append((number, wire, message[at:at + 8]))
            at += 8
        elif wire == 5:
            out.append((number, wire, message[at:at + 4]))
            at += 4
        elif wire == 2:
            n = varint()
            out.append((number, wire, message[at:at + n]))
            at += n
        else:
            sys.exit(f"tensorboard: unexpected wire type {wire}")
    return out


def event(payload):
    """(wall_time, step, file_version, {tag: value})."""
    wall, step, version, values = None, 0, None, {}
    for number, wire, value in fields(payload):
        if number == 1 and wire == 1:
            (wall,) = struct.unpack("<d", value)
        elif number == 2 and wire == 0:
            step = value
        elif number == 3 and wire == 2:
            version = value.decode()
        elif number == 5 and wire == 2:
            for n, w, v in fields(value):
                if n != 1 or w != 2:
                    sys.exit("tensorboard: a Summary field other than value")
                tag, simple = None, None
                for vn, vw, vv in fields(v):
                    if vn == 1 and vw == 2:
                        tag = vv.decode()
                    elif vn == 2 and vw == 5:
                        (simple,) = struct.unpack("<f", vv)
                values[tag] = simple
        else:
            sys.exit(f"tensorboard: unexpected Event field {number} (wire type {wire})")
    if wall is None:
        sys.exit("tensorboard: an Event without wall_time")
    return wall, step, version, values


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def expected_events(metrics):
    """What the event file must hold: [(step, {tag: value}, exact tags)]."""
    out, last_step = [], 0
    for record in metrics:
        if "step" in record and "loss" in record:
            last_step = record["step"]
            values = {"train/loss": record["loss"], "train/lr": record["lr"],
                      "train/samples_per_s": record["samples_per_s"]}
            if "grad_norm" in record:
                values["train/grad_norm"] = record["grad_norm"]
            out.append((last_step, values))
        elif "eval_loss" in record:
            values = {"eval/loss": record["eval_loss"]}
            for key, tag in (("eval_accuracy", "eval/accuracy"), ("eval_top5", "eval/top5"),
                             ("eval_perplexity", "eval/perplexity")):
                if key in record:
                    values[tag] = record[key]
            out.append((last_step, values))
    return out


def check_tensorboard(directory, metrics):
    files = glob.glob(os.path.join(directory, "events.out.tfevents.*"))
    if len(files) != 1:
        sys.exit(f"tensorboard: expected one event file in {directory}, found {files}")
    with open(files[0], "rb") as f:
        events = [event(p) for p in records(f.read())]
    if not events or events[0][2] != "brain.Event:2":
        sys.exit("tensorboard: the first Event has no file_version brain.Event:2")
    want = expected_events(metrics)
    got = events[1:]
    if len(got) != len(want):
        sys.exit(f"tensorboard: {len(got)} scalar events, the metrics file has {len(want)} records")
    for i, ((step, values), (_, got_step, _, got_values)) in enumerate(zip(want, got)):
        # An evaluation is at the global step it followed: the last logged
        # one or later (an epoch may end between logged steps).
        is_eval = "eval/loss" in values
        if got_step != step and not (is_eval and got_step > step):
            sys.exit(f"tensorboard: event {i + 1}: step {got_step}, expected {step}")
        if set(got_values) != set(values):
            sys.exit(f"tensorboard: step {step}: tags {sorted(got_values)}, expected {sorted(values)}")
        for tag, value in values.items():
            # samples_per_s is rounded to 0.1 in the metrics file, and to
            # float32 (half an ulp: 2^-24 relative) in the event file.
            tol = (0.051 + 2.0**-23 * abs(value) if tag == "train/samples_per_s"
                   else 1e-6 * abs(f32(value)))
            if abs(got_values[tag] - f32(value)) > tol:
                sys.exit(f"tensorboard: step {step}: {tag} = {got_values[tag]!r}, metrics {value!r}")
    walls = [e[0] for e in events]
    if walls != sorted(walls) or abs(walls[0] - walls[-1]) > 3600:
        sys.exit(f"tensorboard: wall times out of order: {walls[:3]}...")
    steps = sum(1 for _, v in want if "train/loss" in v)
    print(f"tensorboard: {os.path.basename(files[0])}: {steps} steps and {len(want) - steps} "
          f"evaluations equal the metrics file")


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def check_plot(path, metrics):
    with open(path) as f:
        text = f.read()
    page = Page()
    page.feed(text)
    page.close()
    names = [t for t, _ in page.tags]
    if "script" in names or re.search(r"""(href|src)=["']?(https?:)?//""", text):
        sys.exit("plot: a script or an external reference")
    svgs = re.findall(r"<svg.*?</svg>", text, re.S)
    if not svgs:
        sys.exit("plot: no <svg>")
    for svg in svgs:
        ET.fromstring(svg)  # well-formed XML
    series = {}
    for tag, attrs in page.tags:
        if tag == "polyline":
            series[attrs["data-name"]] = len(attrs["points"].split())
    circles = {}
    for tag, attrs in page.tags:
        if tag == "circle":
            circles[attrs["data-name"]] = circles.get(attrs["data-name"], 0) + 1
    steps = sum(1 for r in metrics if "step" in r and "loss" in r)
    evals = [r for r in metrics if "eval_loss" in r]
    want = {"train loss": steps}
    if evals:
        want["eval loss"] = len(evals)
        for key, name in (("eval_accuracy", "eval accuracy"), ("eval_top5", "eval top-5 accuracy"),
                          ("eval_perplexity", "eval perplexity")):
            if key in evals[0]:
                want[name] = len(evals)
    if series != want:
        sys.exit(f"plot: series {series}, expected {want}")
    if any(circles.get(name, 0) != n for name, n in want.items() if name != "train loss"):
        sys.exit(f"plot: markers {circles}, expected {want}")
    if "<title>" not in text or "optimizer step" not in text:
        sys.exit("plot: no title or no axis label")
    print(f"plot: {len(svgs)} charts, series {sorted(want.items())}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--metrics", required=True)
    p.add_argument("--tensorboard")
    p.add_argument("--plot")
    args = p.parse_args()
    with open(args.metrics) as f:
        metrics = [json.loads(line) for line in f]
    metrics = [r for r in metrics if "loss" in r or "eval_loss" in r]
    if args.tensorboard:
        check_tensorboard(args.tensorboard, metrics)
    if args.plot:
        check_plot(args.plot, metrics)


if __name__ == "__main__":
    main()
