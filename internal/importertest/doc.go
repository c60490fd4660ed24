// Package importertest holds the checks the converters' tests share, their
// fuzz targets above all: that a converted session is one the log accepts
// as it is (what `logtool import` writes), and that an error about a
// trace's content is a clear one.
//
// It is test support: only tests import it. It knows the importers'
// shared contract and the public handle API, not any trace format.
package importertest
