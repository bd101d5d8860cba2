#!/bin/sh
# Runs a stdio server with what it reads and writes copied to DIR/in.jsonl and DIR/out.jsonl.
# usage: wire-tap.sh DIR server-cmd args...
dir=$1; shift
mkdir -p "$dir"
tee -a "$dir/in.jsonl" | "$@" | tee -a "$dir/out.jsonl"
