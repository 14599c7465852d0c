"""The one exception the Python API raises for anything the command line refuses."""

from __future__ import annotations


class J6DoctorError(Exception):
    """What `j6doctor` on the command line would refuse: `str(error)` is the line it prints
    ("j6doctor: error: <file>:<line>: ..."), `message` the part after "j6doctor: error: ",
    `exit_code` its exit status (2: the input; 3: a defect of j6doctor)."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(f"j6doctor: error: {message}")
        self.message = message
        self.exit_code = exit_code
