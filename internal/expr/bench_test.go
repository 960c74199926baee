package expr

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// benchEval measures one guarded evaluation of spec over doc: the cost an
// operation pays for being interruptible shows here.
func benchEval(b *testing.B, spec any, doc bson.D) {
	e, err := Compile(spec)
	if err != nil {
		b.Fatal(err)
	}
	vars := WithGuard(nil, NewGuard(context.Background()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Eval(doc, vars); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEvalArithmetic(b *testing.B) {
	spec := bson.D{{Key: "$add", Value: bson.A{bson.D{{Key: "$multiply", Value: bson.A{"$a", int32(2)}}}, "$b"}}}
	benchEval(b, spec, bson.D{{Key: "a", Value: int32(3)}, {Key: "b", Value: int32(4)}})
}

func BenchmarkEvalRange(b *testing.B) {
	spec := bson.D{{Key: "$size", Value: bson.D{{Key: "$range", Value: bson.A{int32(0), "$n"}}}}}
	benchEval(b, spec, bson.D{{Key: "n", Value: int32(1000)}})
}

func BenchmarkEvalMap(b *testing.B) {
	spec := bson.D{{Key: "$map", Value: bson.D{{Key: "input", Value: "$a"}, {Key: "in", Value: bson.D{{Key: "$add", Value: bson.A{"$$this", int32(1)}}}}}}}
	a := make(bson.A, 1000)
	for i := range a {
		a[i] = int32(i)
	}
	benchEval(b, spec, bson.D{{Key: "a", Value: a}})
}
