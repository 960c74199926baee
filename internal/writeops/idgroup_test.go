package writeops

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/query"
)

// TestIDOnlyGroupsEqualityTypesOnly: a statement joins a group by _id
// only when its _id value matches by equality alone. Every BSON type the
// driver knows has a row: a new type without one fails.
func TestIDOnlyGroupsEqualityTypesOnly(t *testing.T) {
	rows := map[bson.Type]struct {
		value any
		joins bool
	}{
		bson.TypeDouble:           {1.5, true},
		bson.TypeString:           {"a", true},
		bson.TypeEmbeddedDocument: {bson.D{{Key: "$gt", Value: 1}}, false},
		bson.TypeArray:            {bson.A{1}, false},
		bson.TypeBinary:           {bson.Binary{Data: []byte{1}}, true},
		bson.TypeUndefined:        {bson.Undefined{}, false},
		bson.TypeObjectID:         {bson.NewObjectID(), true},
		bson.TypeBoolean:          {true, true},
		bson.TypeDateTime:         {bson.DateTime(1), true},
		bson.TypeNull:             {nil, false},
		bson.TypeRegex:            {bson.Regex{Pattern: "a"}, false},
		bson.TypeDBPointer:        {bson.DBPointer{DB: "d", Pointer: bson.NewObjectID()}, false},
		bson.TypeJavaScript:       {bson.JavaScript("1"), false},
		bson.TypeSymbol:           {bson.Symbol("a"), false},
		bson.TypeCodeWithScope:    {bson.CodeWithScope{Code: "1", Scope: bson.D{}}, false},
		bson.TypeInt32:            {int32(1), true},
		bson.TypeTimestamp:        {bson.Timestamp{T: 1, I: 1}, true},
		bson.TypeInt64:            {int64(1), true},
		bson.TypeDecimal128:       {bson.NewDecimal128(0, 1), true},
		bson.TypeMinKey:           {bson.MinKey{}, false},
		bson.TypeMaxKey:           {bson.MaxKey{}, false},
	}
	for code := 1; code <= 0xFF; code++ {
		typ := bson.Type(code)
		if strings.Contains(typ.String(), "invalid") {
			continue
		}
		if _, ok := rows[typ]; !ok {
			t.Errorf("BSON type %s has no row", typ)
		}
	}
	for typ, row := range rows {
		q := bson.D{{Key: "_id", Value: row.value}}
		f, err := query.NewFilter(q)
		if err != nil {
			// A filter the parser refuses fails its statement alone.
			if row.joins {
				t.Errorf("%s: %v", typ, err)
			}
			continue
		}
		if _, joins := IDOnly(q, f); joins != row.joins {
			t.Errorf("%s: joins a group %v, want %v", typ, joins, row.joins)
		}
	}
}

// TestIDOnlyLeavesCollatedStringsAlone: under a collation that folds
// case, "A" and "a" name one document, so a string _id cannot be looked
// up by its bytes and the statement runs alone; a number still joins.
func TestIDOnlyLeavesCollatedStringsAlone(t *testing.T) {
	c, err := collation.Parse(bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: int32(2)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []struct {
		value any
		joins bool
	}{{"A", false}, {int32(1), true}} {
		q := bson.D{{Key: "_id", Value: row.value}}
		f, err := query.NewFilterWith(q, query.FilterOptions{Collation: c})
		if err != nil {
			t.Fatal(err)
		}
		if _, joins := IDOnly(q, f); joins != row.joins {
			t.Errorf("_id %v under a collation: joins %v, want %v", row.value, joins, row.joins)
		}
	}
}
