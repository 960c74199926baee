// Package ddl holds the definitions of collections, views and indexes as
// create, collMod and dropIndexes change them: their options read with
// mongod 8.0's rules, order and errors, checked against the catalog, and
// applied on one catalog edit (docstore.CatalogEdit), with the modify
// event that a change stream shows of it.
//
// The command layer reads the request, authorizes it and builds the
// reply around what this package returns; nothing here knows the wire
// protocol. Options are handed over as the command's fields less the
// generic ones (lsid, writeConcern, ...), in the command's order.
package ddl
