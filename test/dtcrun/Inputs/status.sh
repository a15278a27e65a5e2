# Runs a command and prints its exit status as `exit=N` (always exits 0), so
# that a test can check the exact status.
"$@"
echo "exit=$?"
