// Package repocheck holds tests of the repository itself rather than of its
// code: what a fresh clone needs (no go.mod replace that points outside the
// repository) and what its users read (citations of the project's own
// documents, docs/format.md §N and docs/cli.md, never of a file they do not
// have), and docs/ itself: under its word cap (12,000 words without the
// generated cli.md), every page it and the code cite present, every link
// of README.md and docs/ leading to a file and heading that exist; and
// the imports of the product (go list): logtool links no example, no
// library package a command, and every package imports only lower layers of
// docs/design.md's diagram ("## Layers"), which is the layering the imports
// give: go test ./internal/check/repocheck -run Diagram -update rewrites it.
//
// It has no exported API and knows nothing of the other packages: its test
// reads the repository's files as text, and asks go list for imports.
package repocheck
