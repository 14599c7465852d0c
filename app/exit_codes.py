"""The exit status of every command: the one definition (docs/CONTRACT.md, "Exit codes";
`j6doctor --help` lists these with the comments beside them). As ruff's: 1 is what the user
asked to be told about, never a defect of j6doctor."""

EXIT_OK = 0            # success: a verdict (暂不能判断 included), a script, a listing; lint / test found nothing
EXIT_FINDINGS = 1      # findings: rules lint / rules test failures, --fail-on matched, cases rediagnose changes
EXIT_INPUT = 2         # bad input or usage: the message names the file, line or key and what to do
EXIT_INTERNAL = 3      # an internal error of j6doctor (or of its bundled rules): the message asks for a report
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT); `ask` has saved the answers given

# The findings by what they are (app/triage.py names the --fail-on one)
EXIT_FAIL_ON = EXIT_FINDINGS
