package commands

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/cursor/paging"
	"github.com/mayflydb/mayfly/internal/ddl"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/nsname"
	"github.com/mayflydb/mayfly/internal/timeseries"
)

func nsNotFound(db, coll string) error {
	return mongoerr.Newf(mongoerr.NamespaceNotFound, "ns does not exist: %s.%s", db, coll)
}

func cmdListCollections(h *Handler, r *request) (bson.D, error) {
	if err := checkFields(r, "filter", "nameOnly", "authorizedCollections", "cursor", "includePendingDrops"); err != nil {
		return nil, err
	}
	f, nameOnly, err := listingArgs(r)
	if err != nil {
		return nil, err
	}
	var docs []bson.D
	for _, name := range h.deps.Store.CollectionNames(r.db) {
		c := h.deps.Store.Collection(r.db, name)
		if c == nil {
			continue
		}
		entry := collectionInfo(c.Meta())
		if isView(c.Meta()) {
			entry = viewInfo(c.Meta())
		}
		if timeseries.Of(c.Meta()) != nil {
			entry = timeseries.Info(c.Meta())
		}
		if !f.Match(entry) || !h.collectionListable(r, name) {
			continue
		}
		if nameOnly {
			entry = entry[:2]
		}
		docs = append(docs, entry)
	}
	docs = h.listLocalViews(r, f, nameOnly, docs)
	batch, err := cursorBatchSize(r)
	if err != nil {
		return nil, err
	}
	return h.requestCursorReply(r, r.db+".$cmd.listCollections", paging.Slice(docs...), batch, false)
}

func cursorBatchSize(r *request) (int64, error) {
	cur, err := optDoc(r, "cursor")
	if err != nil || cur == nil {
		return paging.DefaultBatchSize, err
	}
	v, _ := bsonutil.Field(cur, "batchSize")
	return batchSizeArg(r, v, "cursor.batchSize")
}

func collectionInfo(m *catalog.Collection) bson.D {
	info := bson.D{
		{Key: "name", Value: m.Name},
		{Key: "type", Value: "collection"},
		{Key: "options", Value: m.Options},
		{Key: "info", Value: bson.D{{Key: "readOnly", Value: false}, {Key: "uuid", Value: m.UUID}}},
	}
	if m.Clustered {
		return info // a clustered collection has no separate _id index
	}
	return append(info, bson.E{Key: "idIndex", Value: ddl.IDIndexSpec(m.Indexes[0].Spec, m.Options)})
}

// createOptionsKnown are create's options that Mayfly implements.
var createOptionsKnown = []string{"capped", "size", "max", "autoIndexId", "idIndex", "writeConcern", "flags",
	"validator", "validationLevel", "validationAction", "collation", preImagesOption,
	catalog.ClusteredIndexOption, catalog.ExpireAfterOption}

// createOptionsUnsupported are MongoDB's create options for features Mayfly
// does not have; they fail instead of being ignored.
var createOptionsUnsupported = []string{
	"pipeline", "encryptedFields", "storageEngine", "indexOptionDefaults",
}

func cmdCreate(h *Handler, r *request) (bson.D, error) {
	if err := refuseDDLReadConcern(r); err != nil {
		return nil, err
	}
	name, err := collectionArg(r)
	if err != nil {
		return nil, err
	}
	if err := nsname.ValidateNamespace(r.db, name); err != nil {
		return nil, err
	}
	if err := nsname.ValidateUserCreate(r.db, name); err != nil {
		return nil, err
	}
	if err := refuseCreateInTransaction(r, name); err != nil {
		return nil, err
	}
	if _, ok := bsonutil.Field(r.body, "viewOn"); ok {
		if _, clustered := bsonutil.Field(r.body, catalog.ClusteredIndexOption); clustered {
			return nil, mongoerr.New(mongoerr.Location6026500, "The 'clusteredIndex' option is not supported with views")
		}
		return bson.D{}, ddl.CreateView(h.deps.Store, r.db, name, commandOptions(r))
	}
	if _, ok := bsonutil.Field(r.body, "pipeline"); ok {
		return nil, mongoerr.New(mongoerr.BadValue, "'pipeline' requires 'viewOn' to also be specified")
	}
	for _, e := range r.body[1:] {
		if slices.Contains(createOptionsUnsupported, e.Key) {
			return nil, mongoerr.Newf(mongoerr.InvalidOptions, "the create option '%s' is not supported by Mayfly", e.Key)
		}
	}
	if err := checkFields(r, append(createOptionsKnown, append(createOptionsUnsupported, "timeseries", "expireAfterSeconds")...)...); err != nil {
		return nil, err
	}
	opt, err := createOptions(r)
	if err != nil {
		return nil, err
	}
	if err := ddl.CreateClustered(r.body, &opt, h.deps.Clock.Now()); err != nil {
		return nil, err
	}
	if _, err := ddl.CreateTimeseries(r.body, &opt); err != nil {
		return nil, err
	}
	return bson.D{}, h.createCollection(r, name, opt)
}

func createOptions(r *request) (docstore.CreateOptions, error) {
	var opt docstore.CreateOptions
	capped, err := optBool(r, "capped")
	if err != nil {
		return opt, err
	}
	size, err := optInt(r, "size", 0)
	if err != nil {
		return opt, err
	}
	maxDocs, err := optInt(r, "max", 0)
	if err != nil {
		return opt, err
	}
	if capped && size == 0 {
		return opt, mongoerr.New(mongoerr.InvalidOptions, "the 'size' field is required when 'capped' is true")
	}
	opt.Capped, opt.CappedSize, opt.CappedMax = capped, size, maxDocs
	if capped {
		opt.Raw = bson.D{{Key: "capped", Value: true}, {Key: "size", Value: size}}
		if maxDocs > 0 {
			opt.Raw = append(opt.Raw, bson.E{Key: "max", Value: maxDocs})
		}
	}
	vopts, ok, err := ddl.ValidationOptions(r.body, "create")
	if err != nil {
		return opt, err
	}
	if ok {
		opt.Raw = append(opt.Raw, ddl.WithValidationDefaults(vopts)...)
	}
	coll, err := ddl.CreateCollation(r.body)
	if err != nil {
		return opt, err
	}
	if coll != nil {
		opt.Raw = append(opt.Raw, bson.E{Key: "collation", Value: coll})
	}
	return opt, createPreImages(r, &opt)
}

func cmdDrop(h *Handler, r *request) (bson.D, error) {
	name, err := collectionArg(r)
	if err != nil {
		return nil, err
	}
	c := h.deps.Store.Collection(r.db, name)
	if c == nil {
		// MongoDB 7.0+ answers a drop of a missing collection with ok: 1.
		return bson.D{{Key: "ns", Value: r.db + "." + name}}, nil
	}
	n := len(c.Indexes())
	if _, err := h.deps.Store.DropCollection(r.db, name); err != nil {
		return nil, err
	}
	return bson.D{{Key: "nIndexesWas", Value: int32(n)}, {Key: "ns", Value: r.db + "." + name}}, nil
}

func cmdDropDatabase(h *Handler, r *request) (bson.D, error) {
	if r.db == "admin" {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "Dropping the 'admin' database is prohibited.")
	}
	if err := h.deps.Store.DropDatabase(r.db); err != nil {
		return nil, err
	}
	return bson.D{{Key: "dropped", Value: r.db}}, nil
}

func cmdRenameCollection(h *Handler, r *request) (bson.D, error) {
	if r.db != "admin" {
		return nil, mongoerr.New(mongoerr.Unauthorized, "renameCollection may only be run against the admin database.")
	}
	from, ok := r.body[0].Value.(string)
	if !ok {
		return nil, wrongType(r.name, "renameCollection", r.body[0].Value, "string")
	}
	toV, _ := bsonutil.Field(r.body, "to")
	to, ok := toV.(string)
	if !ok {
		return nil, wrongType(r.name, "to", toV, "string")
	}
	dropTarget, err := optBool(r, "dropTarget")
	if err != nil {
		return nil, err
	}
	fromDB, fromColl, ok1 := strings.Cut(from, ".")
	toDB, toColl, ok2 := strings.Cut(to, ".")
	if !ok1 || !ok2 {
		return nil, mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid namespace specified '%s'", from)
	}
	if err := checkRenameNamespaces(fromDB, fromColl, toDB, toColl); err != nil {
		return nil, err
	}
	return bson.D{}, h.deps.Store.RenameCollection(fromDB, fromColl, toDB, toColl, dropTarget)
}

// checkRenameNamespaces applies mongod's rules for renameCollection: both
// ends must be collections clients may write (IllegalOperation, naming
// the end), and system.js and system.users are never renamed to or from.
func checkRenameNamespaces(fromDB, fromColl, toDB, toColl string) error {
	if err := nsname.ValidateUserWrite(fromDB, fromColl); err != nil {
		return mongoerr.New(mongoerr.IllegalOperation, "error with source namespace: "+mongoerr.As(err).Msg)
	}
	if err := nsname.ValidateUserWrite(toDB, toColl); err != nil {
		return mongoerr.New(mongoerr.IllegalOperation, "error with target namespace: "+mongoerr.As(err).Msg)
	}
	for _, special := range []string{"system.js", "system.users"} {
		if fromColl == special || toColl == special {
			return mongoerr.Newf(mongoerr.IllegalOperation, "renaming %s collection or renaming to %s is not allowed", special, special)
		}
	}
	return nil
}

func cmdCreateIndexes(h *Handler, r *request) (bson.D, error) {
	if err := refuseDDLReadConcern(r); err != nil {
		return nil, err
	}
	name, err := collectionArg(r)
	if err != nil {
		return nil, err
	}
	if err := checkFields(r, "indexes", "commitQuorum", "ignoreUnknownIndexOptions", "isTimeseriesNamespace"); err != nil {
		return nil, err
	}
	v, ok := bsonutil.Field(r.body, "indexes")
	if !ok {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'createIndexes.indexes' is missing but a required field")
	}
	specs, err := cmdargs.DocArray(r.name, "indexes", v)
	if err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "Must specify at least one index to create")
	}
	if err := nsname.ValidateUserWrite(r.db, name); err != nil {
		return nil, err
	}
	if err := refuseSystemIndexesInTransaction(r, name); err != nil {
		return nil, err
	}
	ixs, err := ddl.IndexSpecs(specs, h.defaultCollation(r.db, name))
	if err != nil {
		return nil, err
	}
	if err := h.refuseView(r.db, name); err != nil {
		return nil, err
	}
	c, created, err := h.getOrCreate(r, r.db, name)
	if err != nil {
		return nil, err
	}
	if ixs, err = c.Meta().WithoutClusteredIndex(ixs); err != nil {
		return nil, err
	}
	if err := timeseries.CheckNewIndexes(c.Meta(), ixs); err != nil {
		return nil, err
	}
	return h.createIndexesIn(r, c, ixs, created)
}

func createIndexesReply(res docstore.CreateIndexesResult, created bool) bson.D {
	out := bson.D{{Key: "numIndexesBefore", Value: int32(res.Before)}, {Key: "numIndexesAfter", Value: int32(res.After)}}
	if created {
		out = append(out, bson.E{Key: "createdCollectionAutomatically", Value: true})
	}
	if res.AllExisted {
		out = append(out, bson.E{Key: "note", Value: "all indexes already exist"})
	}
	return out
}

// indexListingOf is the listing listIndexes' flags ask for.
func indexListingOf(r *request) (l ddl.IndexListing, err error) {
	if l.BuildUUIDs, err = optBool(r, "includeBuildUUIDs"); err != nil {
		return l, err
	}
	if l.BuildInfo, err = optBool(r, "includeIndexBuildInfo"); err != nil {
		return l, err
	}
	return l, l.Check()
}

func cmdListIndexes(h *Handler, r *request) (bson.D, error) {
	name, err := collectionArg(r)
	if err != nil {
		return nil, err
	}
	if err := checkFields(r, "cursor", "includeBuildUUIDs", "includeIndexBuildInfo"); err != nil {
		return nil, err
	}
	listing, err := indexListingOf(r)
	if err != nil {
		return nil, err
	}
	c := h.deps.Store.Collection(r.db, name)
	if c == nil {
		return nil, nsNotFound(r.db, name)
	}
	docs := listing.List(c.Meta())
	batch, err := cursorBatchSize(r)
	if err != nil {
		return nil, err
	}
	return h.requestCursorReply(r, r.db+"."+name, paging.Slice(docs...), batch, false)
}

func cmdDropIndexes(h *Handler, r *request) (bson.D, error) {
	name, err := collectionArg(r)
	if err != nil {
		return nil, err
	}
	c := h.deps.Store.Collection(r.db, name)
	if c == nil {
		return nil, nsNotFound(r.db, name)
	}
	v, ok := bsonutil.Field(r.body, "index")
	if !ok {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'dropIndexes.index' is missing but a required field")
	}
	if err := c.Meta().RefuseDropClustered(v); err != nil {
		return nil, err
	}
	names, err := ddl.IndexesToDrop(c.Meta(), v)
	if err != nil {
		return nil, err
	}
	was := len(c.Indexes())
	if err := c.DropIndexes(names); err != nil {
		return nil, err
	}
	out := bson.D{{Key: "nIndexesWas", Value: int32(was)}}
	if s, ok := v.(string); ok && s == "*" {
		out = append(out, bson.E{Key: "msg", Value: "non-_id indexes dropped for collection"})
	}
	return out, nil
}
