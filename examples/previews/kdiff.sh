#!/bin/sh
# kdiff.sh: what applying desired/$NAME.yaml would change in
# live/$NAME.yaml, as a unified diff (the shape of kubectl diff). It only
# reads; it exits 0 whether or not they differ, and 2 on trouble.
diff -u --label "live/$NAME.yaml" --label "desired/$NAME.yaml" "live/$NAME.yaml" "desired/$NAME.yaml"
[ $? -le 1 ]
