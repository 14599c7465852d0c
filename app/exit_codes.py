"""The exit status of every command (README, "Exit status")."""

EXIT_OK = 0            # a verdict, a script, a listing was produced (暂不能判断 included)
EXIT_INTERNAL = 1      # a defect of j6doctor (or of the bundled rules): the message asks for a report
EXIT_INPUT = 2         # a usage error or invalid input: the message names the file, line and what to do
EXIT_FAIL_ON = 3       # --fail-on: the report was written and the verdict is one of the stages named
EXIT_CHANGED = 4       # cases rediagnose: some stored case's verdict would change (review before shipping)
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT); `ask` has saved the answers given
