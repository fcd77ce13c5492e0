"""What differs between Linux, macOS and Windows, in one place; the rest of hostlink never
asks which system it runs on.

One module a job: `processes` (a child in a tree of its own, and the end of exactly that
tree), `win32` (the Win32 calls behind it on Windows), `commands` (how a command name
becomes an argv), `files` (private files and their ownership), `locks` (the exclusive lock
of a lock file), `console` (what stops a host: signals, Ctrl+Break, the console closing),
`pipes` (reading a pipe), `limits` (open descriptors), `folders` (config, cache and state
per system) and `shell` (the lines a person pastes into their shell).
"""
