// Package repocheck holds tests of the repository itself rather than of its
// code: what a fresh clone needs (no go.mod replace that points outside the
// repository) and what its users read (citations of the project's own
// documents, docs/format.md §N and docs/cli.md, never of a file they do not
// have).
//
// It has no exported API and knows nothing of the other packages: its test
// reads the repository's files as text.
package repocheck
