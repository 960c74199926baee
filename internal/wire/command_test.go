package wire

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A command's documents decode to what bson.Unmarshal gives for each,
// whether the message is small enough to share one text (every string cut
// from it at its own offset: keys, values, nested and in sequences) or
// too big and copied string by string.
func TestCommandSharedAndCopiedAgree(t *testing.T) {
	for _, pad := range []int{0, sharedTextMax} {
		t.Run(fmt.Sprintf("pad=%d", pad), func(t *testing.T) {
			body := bson.D{{Key: "update", Value: "sessions"}, {Key: "ordered", Value: true},
				{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}},
				{Key: "comment", Value: strings.Repeat("c", pad)}, {Key: "$db", Value: "test"}}
			var updates, ops [][]byte
			for i := range 3 {
				updates = append(updates, mustDoc(t, bson.D{
					{Key: "q", Value: bson.D{{Key: "token", Value: fmt.Sprintf("tok%d", i)}}},
					{Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "accessTime", Value: bson.DateTime(1000 + i)},
						{Key: "tags", Value: bson.A{"a", fmt.Sprint(i), bson.D{{Key: "k" + fmt.Sprint(i), Value: "v"}}}}}}}}}))
				ops = append(ops, mustDoc(t, bson.D{{Key: "op" + fmt.Sprint(i), Value: int32(i)}}))
			}
			m, err := readAll(rawMsg(0, kind0(mustDoc(t, body)), kind1("updates", updates...), kind1("ops", ops...)))
			if err != nil {
				t.Fatal(err)
			}
			if shared := m.docBytes() <= sharedTextMax; shared != (pad == 0) {
				t.Fatalf("%d bytes: shared %v", m.docBytes(), shared)
			}
			got, err := m.Command()
			if err != nil {
				t.Fatal(err)
			}
			want := append(body, bson.E{Key: "updates", Value: unmarshalAll(t, updates)}, bson.E{Key: "ops", Value: unmarshalAll(t, ops)})
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %v\nwant %v", got, want)
			}
		})
	}
}

func unmarshalAll(t *testing.T, docs [][]byte) bson.A {
	out := bson.A{}
	for _, raw := range docs {
		var d bson.D
		if err := bson.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// Documents and arrays decoded from one slab have no room past their own
// elements, so a handler that appends to one (as legacy commands get $db)
// never overwrites the next.
func TestCommandAppendKeepsNeighbours(t *testing.T) {
	body := mustDoc(t, bson.D{{Key: "find", Value: "c"},
		{Key: "a", Value: bson.D{{Key: "x", Value: int32(1)}}},
		{Key: "b", Value: bson.A{int32(2)}},
		{Key: "c", Value: bson.D{{Key: "y", Value: int32(3)}}},
		{Key: "$db", Value: "test"}})
	m, err := readAll(rawMsg(0, kind0(body)))
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := m.Command()
	if err != nil {
		t.Fatal(err)
	}
	a := cmd[1].Value.(bson.D)
	_ = append(a, bson.E{Key: "over", Value: "written"})
	arr := cmd[2].Value.(bson.A)
	_ = append(arr, "over")
	_ = append(cmd, bson.E{Key: "extra", Value: int32(9)})
	want := bson.D{{Key: "find", Value: "c"},
		{Key: "a", Value: bson.D{{Key: "x", Value: int32(1)}}},
		{Key: "b", Value: bson.A{int32(2)}},
		{Key: "c", Value: bson.D{{Key: "y", Value: int32(3)}}},
		{Key: "$db", Value: "test"}}
	if !reflect.DeepEqual(cmd, want) {
		t.Fatalf("an append changed a neighbour: %v", cmd)
	}
}
