// Package writeops applies write statements to collections and reports
// each statement's result: the rules of a document to insert, updates in
// their three forms (operators, a replacement, a pipeline) with their
// upserts, deletes, findAndModify's one-document write, and the runner
// that commits a write's statements in groups with their retry records.
// It knows no command syntax and no reply shape: the command layer parses
// a statement, calls here, and builds the reply from the results.
package writeops
