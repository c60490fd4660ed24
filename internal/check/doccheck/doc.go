// Package doccheck holds a test that keeps the documentation's Go code
// honest: every Go snippet of README.md and of the packages' doc comments
// must be a copy of code that `go test` compiles and runs (an Example
// function or a test), so a snippet cannot drift from the API.
//
// It reads the repository's text files only; it knows nothing of what the
// code does.
package doccheck
