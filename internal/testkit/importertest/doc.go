// Package importertest holds the checks the converters' tests share: that a
// converted session is one the log accepts as it is (what an import
// writes), that it keeps every source record, that an error about a
// trace's content is a clear one, that every turn is closed, that a bad
// line leaves no trace in what the converter makes of the rest; a generator
// per format (Gen) writing traces of every record type its definition has;
// and a count of what a trace holds (SourceCounts: prompts, assistant
// texts, calls, results) made apart from the importers, to compare with a
// session's (SessionCounts).
//
// It is test support: only tests import it. It knows the importers' shared
// contract, the public handle, projection and replay API and, for its
// counts and generators, each format's records — never its importer.
package importertest
