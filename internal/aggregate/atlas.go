package aggregate

import "github.com/mayflydb/mayfly/internal/mongoerr"

// Atlas Search runs in mongot, a process beside mongod that Mayfly does
// not have. mongod without one configured still knows the search stages
// and the search index commands, and refuses them with SearchNotEnabled
// naming Atlas, which drivers and applications test for; Mayfly answers
// the same, rather than "unrecognized stage" or "no such command".

// atlasSearchStages are the stages that need mongot, each with its
// refusal. They are not in stageParsers: nothing of them ever runs.
func atlasSearchStages() map[string]func() *mongoerr.Error {
	return map[string]func() *mongoerr.Error{
		"$search":            searchStagesNotEnabled,
		"$searchMeta":        searchStagesNotEnabled,
		"$vectorSearch":      searchStagesNotEnabled,
		"$listSearchIndexes": SearchIndexesNotEnabled,
	}
}

// AtlasSearchStageNames lists the stages refused as needing Atlas Search.
func AtlasSearchStageNames() []string {
	var names []string
	for name := range atlasSearchStages() {
		names = append(names, name)
	}
	return names
}

// SearchIndexesNotEnabled is mongod's refusal of the search index
// commands and of $listSearchIndexes.
func SearchIndexesNotEnabled() *mongoerr.Error {
	return mongoerr.New(mongoerr.SearchNotEnabled, "Using Atlas Search Database Commands and the $listSearchIndexes "+
		"aggregation stage requires additional configuration. Please connect to Atlas or an AtlasCLI local "+
		"deployment to enable. For more information on how to connect, see "+
		"https://dochub.mongodb.org/core/atlas-cli-deploy-local-reqs.")
}

// searchStagesNotEnabled is mongod's refusal of $search, $searchMeta and
// $vectorSearch, word for word (no space after "enable.").
func searchStagesNotEnabled() *mongoerr.Error {
	return mongoerr.New(mongoerr.SearchNotEnabled, "Using $search and $vectorSearch aggregation stages requires "+
		"additional configuration. Please connect to Atlas or an AtlasCLI local deployment to enable."+
		"For more information on how to connect, see https://dochub.mongodb.org/core/atlas-cli-deploy-local-reqs.")
}
