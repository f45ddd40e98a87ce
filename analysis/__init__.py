"""Analysis: pure functions over run directories and raw tool outputs. Nothing in this
package starts a process; it reads files and computes tables."""
