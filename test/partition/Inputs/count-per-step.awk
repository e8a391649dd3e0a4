# Counts the lines matching `pattern` that one step of the action list
# function `list` runs: its own, plus each function it calls times its
# calls (stage functions call no others). Usage:
#   awk -v list=train_step_rank1 -v pattern='graph.transpose' \
#       -f count-per-step.awk partitioned.mlir
/^  func\.func / {
  match($0, /@[A-Za-z0-9_]+/)
  fn = substr($0, RSTART + 1, RLENGTH - 1)
}
$0 ~ pattern { own[fn]++ }
fn == list && / call @/ {
  match($0, /call @[A-Za-z0-9_]+/)
  calls[substr($0, RSTART + 6, RLENGTH - 6)]++
}
END {
  n = own[list]
  for (f in calls)
    n += calls[f] * own[f]
  print n + 0
}
