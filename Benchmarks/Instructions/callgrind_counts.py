#!/usr/bin/env python3
"""Totals of one callgrind output file: instructions (Ir) and calls to the allocator.

Usage: callgrind_counts.py FILE  ->  prints "<instructions> <allocations>"

Allocations are the calls to malloc, calloc, realloc and posix_memalign recorded while
collection was on (the profiles toggle it on around the measured step only). Callgrind
compresses names: "cfn=(12) malloc" names id 12 once, later lines say "cfn=(12)".
"""
import re
import sys

ALLOCATORS = {"malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc"}


def counts(path):
    names = {}
    instructions = None
    allocations = 0
    callee = None
    with open(path) as handle:
        for line in handle:
            if line.startswith(("summary:", "totals:")):
                instructions = int(line.split()[1])
            elif line.startswith(("cfn=", "fn=")):
                match = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line.strip())
                if match:
                    if match.group(2):
                        names[match.group(1)] = match.group(2)
                    name = names.get(match.group(1), "")
                else:
                    name = line.split("=", 1)[1].strip()
                callee = name if line.startswith("cfn=") else None
            elif line.startswith("calls=") and callee is not None:
                if callee in ALLOCATORS:
                    allocations += int(line.split("=")[1].split()[0])
                callee = None
    return instructions or 0, allocations


if __name__ == "__main__":
    print(*counts(sys.argv[1]))
