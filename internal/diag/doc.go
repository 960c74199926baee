// Package diag computes the figures the server reports about itself and
// its collections: serverStatus's sections, hostInfo's, collStats',
// dbStats' and dataSize's figures, top's table, dbHash's hashes and
// validate's report. It reads the layers below and changes nothing; the
// command layer parses the request and places what diag returns in its
// reply.
package diag
