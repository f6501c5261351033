package workflows

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/kit/freeform"
)

// testEnvelope is an event envelope as the engine decodes it.
const testEnvelope = `{
	"id": "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
	"type": "deal.won",
	"project_id": "p1",
	"bot_id": "b1",
	"occurred_at": "2026-11-22T10:00:00Z",
	"data": {
		"deal": {"value": 40000, "title": "VIP renewal", "currency": "EUR", "probability": 0.75},
		"value_text": "40000",
		"fraction_text": "12.5",
		"padded_text": " 40000",
		"word": "many",
		"status": "won",
		"closed": true,
		"note": null,
		"count": 12,
		"tags": ["vip", "renewal", 7],
		"items": [{"name": "seat", "qty": 3}, {"name": "support", "qty": 1}],
		"matrix": [[1, 2], [3, 4]],
		"contact": {"name": "Ada", "email": "ada@example.com"},
		"0": "zero key",
		"ticket": "order 12 shipped, 12.5 kg"
	}
}`

// envelopeOf decodes js as the engine does: numbers are float64.
func envelopeOf(t testing.TB, js string) map[string]any {
	t.Helper()
	var env map[string]any
	if err := json.Unmarshal([]byte(js), &env); err != nil {
		t.Fatalf("decode envelope: %v", err)
	}
	return env
}

// operand decodes a condition value as definitions are decoded (json.Number for numbers).
func operand(t testing.TB, js string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode operand %s: %v", js, err)
	}
	return v
}

func TestLookup(t *testing.T) {
	env := envelopeOf(t, testEnvelope)
	for _, tc := range []struct {
		path  string
		want  string // JSON of the value, when found
		found bool
	}{
		{"bot_id", `"b1"`, true},
		{"data.deal.value", `40000`, true},
		{"data.deal", `{"currency":"EUR","probability":0.75,"title":"VIP renewal","value":40000}`, true},
		{"data.note", `null`, true},
		{"data.items.0.name", `"seat"`, true},
		{"data.items.1.qty", `1`, true},
		{"data.matrix.1.0", `3`, true},
		{"data.tags.2", `7`, true},
		{"data.0", `"zero key"`, true}, // a digit segment on an object is a key
		{"data.items.00.name", `"seat"`, true},
		{"data.items.2.name", ``, false}, // out of range
		{"data.items.99999999999999999999999", ``, false},
		{"data.items.first", ``, false},
		{"data.deal.value.x", ``, false}, // through a number
		{"data.note.x", ``, false},       // through null
		{"data.missing", ``, false},
		{"missing", ``, false},
		{"Data.deal", ``, false}, // keys are case-sensitive
		{"", ``, false},
		{"data..deal", ``, false},
		{".data", ``, false},
		{"data.", ``, false},
		{"data.deal value", ``, false},
		{"data.items.-1", ``, false},
		{"0.data", ``, false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			got, found := Lookup(env, tc.path)
			if found != tc.found {
				t.Fatalf("found = %v, want %v", found, tc.found)
			}
			if !found {
				return
			}
			js, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(js) != tc.want {
				t.Fatalf("value = %s, want %s", js, tc.want)
			}
		})
	}
	if _, found := Lookup(nil, "data"); found {
		t.Fatal("nil envelope resolved")
	}
}

func TestMatches(t *testing.T) {
	env := envelopeOf(t, testEnvelope)
	for _, tc := range []struct {
		name            string
		field, op, want string // want is the condition value as JSON ("" for nil)
		holds           bool
	}{
		// exists
		{"ExistsTrue", "data.status", OpExists, `true`, true},
		{"ExistsNull", "data.note", OpExists, `true`, true},
		{"ExistsArrayIndex", "data.items.1", OpExists, `true`, true},
		{"ExistsMissing", "data.missing", OpExists, `true`, false},
		{"ExistsFalseMissing", "data.missing", OpExists, `false`, true},
		{"ExistsFalsePresent", "data.status", OpExists, `false`, false},
		{"ExistsFalseOutOfRange", "data.items.5", OpExists, `false`, true},
		{"ExistsNilValueMeansTrue", "data.status", OpExists, ``, true},
		{"ExistsNilValueMissing", "data.missing", OpExists, ``, false},
		{"ExistsNonBool", "data.status", OpExists, `"yes"`, false},

		// eq
		{"EqString", "data.status", OpEq, `"won"`, true},
		{"EqStringCaseSensitive", "data.status", OpEq, `"Won"`, false},
		{"EqStringDiffers", "data.status", OpEq, `"lost"`, false},
		{"EqNumber", "data.deal.value", OpEq, `40000`, true},
		{"EqNumberFraction", "data.deal.value", OpEq, `40000.0`, true},
		{"EqNumberExponent", "data.deal.value", OpEq, `4e4`, true},
		{"EqNumberDiffers", "data.deal.value", OpEq, `40001`, false},
		{"EqNumberNotString", "data.deal.value", OpEq, `"40000"`, false},
		{"EqNumericStringNotNumber", "data.value_text", OpEq, `40000`, false},
		{"EqNumericStringAsString", "data.value_text", OpEq, `"40000"`, true},
		{"EqBool", "data.closed", OpEq, `true`, true},
		{"EqBoolDiffers", "data.closed", OpEq, `false`, false},
		{"EqBoolNotString", "data.closed", OpEq, `"true"`, false},
		{"EqNull", "data.note", OpEq, `null`, true},
		{"EqNullVsString", "data.note", OpEq, `""`, false},
		{"EqStringVsNull", "data.status", OpEq, `null`, false},
		{"EqArray", "data.tags", OpEq, `["vip","renewal",7]`, true},
		{"EqArrayOrder", "data.tags", OpEq, `["renewal","vip",7]`, false},
		{"EqArrayLength", "data.tags", OpEq, `["vip","renewal"]`, false},
		{"EqObject", "data.contact", OpEq, `{"email":"ada@example.com","name":"Ada"}`, true},
		{"EqObjectMissingKey", "data.contact", OpEq, `{"name":"Ada"}`, false},
		{"EqObjectExtraKey", "data.contact", OpEq, `{"name":"Ada","email":"ada@example.com","x":1}`, false},
		{"EqNestedArrayIndex", "data.items.0.name", OpEq, `"seat"`, true},
		{"EqTopLevel", "type", OpEq, `"deal.won"`, true},
		{"EqMissing", "data.missing", OpEq, `"won"`, false},

		// ne
		{"NeDiffers", "data.status", OpNe, `"lost"`, true},
		{"NeSame", "data.status", OpNe, `"won"`, false},
		{"NeCase", "data.status", OpNe, `"WON"`, true},
		{"NeNumberSameValue", "data.deal.value", OpNe, `40000.00`, false},
		{"NeNumberVsString", "data.deal.value", OpNe, `"40000"`, true},
		{"NeMissingFails", "data.missing", OpNe, `"won"`, false},
		{"NeOutOfRangeFails", "data.items.7.name", OpNe, `"seat"`, false},

		// gt, gte, lt, lte
		{"GtTrue", "data.deal.value", OpGt, `39999.5`, true},
		{"GtEqual", "data.deal.value", OpGt, `40000`, false},
		{"GteEqual", "data.deal.value", OpGte, `40000`, true},
		{"GteBelow", "data.deal.value", OpGte, `40000.01`, false},
		{"LtTrue", "data.deal.probability", OpLt, `1`, true},
		{"LtEqual", "data.deal.value", OpLt, `40000`, false},
		{"LteEqual", "data.deal.value", OpLte, `4e4`, true},
		{"LteAbove", "data.deal.value", OpLte, `-1`, false},
		{"GtNumericString", "data.value_text", OpGt, `30000`, true},
		{"GteNumericString", "data.value_text", OpGte, `40000`, true},
		{"LtNumericString", "data.value_text", OpLt, `40000`, false},
		{"LtFractionString", "data.fraction_text", OpLt, `13`, true},
		{"GtPaddedStringFails", "data.padded_text", OpGt, `1`, false},
		{"GtWordFails", "data.word", OpGt, `1`, false},
		{"LtWordFails", "data.word", OpLt, `1`, false},
		{"GtBoolFails", "data.closed", OpGt, `0`, false},
		{"GtNullFails", "data.note", OpGt, `-1`, false},
		{"LtNullFails", "data.note", OpLt, `1`, false},
		{"GtObjectFails", "data.deal", OpGt, `0`, false},
		{"GtArrayFails", "data.tags", OpGt, `0`, false},
		{"GtMissingFails", "data.missing", OpGt, `0`, false},
		{"LtMissingFails", "data.missing", OpLt, `1e9`, false},
		{"GtStringOperandFails", "data.deal.value", OpGt, `"1"`, false},
		{"GtArrayIndex", "data.items.0.qty", OpGt, `2`, true},

		// contains
		{"ContainsSubstring", "data.deal.title", OpContains, `"VIP"`, true},
		{"ContainsCaseSensitive", "data.deal.title", OpContains, `"vip"`, false},
		{"ContainsEmpty", "data.deal.title", OpContains, `""`, true},
		{"ContainsNumberInString", "data.ticket", OpContains, `12`, true},
		{"ContainsFractionInString", "data.ticket", OpContains, `12.50`, true},
		{"ContainsNumberAbsent", "data.ticket", OpContains, `13`, false},
		{"ContainsNumberNoExponent", "data.value_text", OpContains, `4e4`, true},
		{"ContainsArrayString", "data.tags", OpContains, `"vip"`, true},
		{"ContainsArrayWholeElementsOnly", "data.tags", OpContains, `"vi"`, false},
		{"ContainsArrayNumber", "data.tags", OpContains, `7.0`, true},
		{"ContainsArrayNumberNotString", "data.tags", OpContains, `"7"`, false},
		{"ContainsNumberFieldFails", "data.count", OpContains, `1`, false},
		{"ContainsObjectFieldFails", "data.contact", OpContains, `"name"`, false},
		{"ContainsNullFieldFails", "data.note", OpContains, `""`, false},
		{"ContainsMissingFails", "data.missing", OpContains, `""`, false},

		// in
		{"InString", "data.status", OpIn, `["open","won"]`, true},
		{"InStringAbsent", "data.status", OpIn, `["open","lost"]`, false},
		{"InStringCase", "data.status", OpIn, `["WON"]`, false},
		{"InNumber", "data.count", OpIn, `[1,12.0]`, true},
		{"InNumberNotString", "data.count", OpIn, `["12"]`, false},
		{"InBool", "data.closed", OpIn, `[false,true]`, true},
		{"InArrayElement", "data.matrix.0", OpIn, `[[1,2],[3,4]]`, true},
		{"InObject", "data.contact", OpIn, `[{"name":"Ada","email":"ada@example.com"}]`, true},
		{"InNotArrayFails", "data.status", OpIn, `"won"`, false},
		{"InEmptyFails", "data.status", OpIn, `[]`, false},
		{"InMissingFails", "data.missing", OpIn, `[null,"won"]`, false},

		{"UnknownOperatorFails", "data.status", "like", `"won"`, false},
		{"InvalidPathFails", "data..status", OpEq, `"won"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var value any
			if tc.want != "" {
				value = operand(t, tc.want)
			}
			c := Condition{Field: tc.field, Operator: tc.op, Value: freeform.Value{V: value}}
			if got := Matches([]Condition{c}, env); got != tc.holds {
				t.Fatalf("Matches(%s %s %s) = %v, want %v", tc.field, tc.op, tc.want, got, tc.holds)
			}
		})
	}
}

// TestMatchesGoOperands covers operands built in Go or decoded as float64, as well as
// json.Number from definitions.
func TestMatchesGoOperands(t *testing.T) {
	env := envelopeOf(t, testEnvelope)
	for _, tc := range []struct {
		name  string
		c     Condition
		holds bool
	}{
		{"EqInt", Condition{"data.deal.value", OpEq, freeform.Value{V: 40000}}, true},
		{"EqInt64", Condition{"data.deal.value", OpEq, freeform.Value{V: int64(40000)}}, true},
		{"EqInt32", Condition{"data.count", OpEq, freeform.Value{V: int32(12)}}, true},
		{"EqFloat64", Condition{"data.deal.value", OpEq, freeform.Value{V: 40000.0}}, true},
		{"EqUint", Condition{"data.count", OpEq, freeform.Value{V: uint(12)}}, true},
		{"NeInt", Condition{"data.deal.value", OpNe, freeform.Value{V: 40000}}, false},
		{"GtInt", Condition{"data.value_text", OpGt, freeform.Value{V: 39999}}, true},
		{"LteInt64", Condition{"data.deal.value", OpLte, freeform.Value{V: int64(40000)}}, true},
		{"ContainsInt", Condition{"data.ticket", OpContains, freeform.Value{V: 12}}, true},
		{"ContainsFloat", Condition{"data.ticket", OpContains, freeform.Value{V: 12.5}}, true},
		{"InStrings", Condition{"data.status", OpIn, freeform.Value{V: []string{"won"}}}, true},
		{"InInts", Condition{"data.count", OpIn, freeform.Value{V: []int{1, 12}}}, true},
		{"InNamedSlice", Condition{"data.status", OpIn, freeform.Value{V: namedList{"open", "won"}}}, true},
		{"EqNamedMap", Condition{"data.contact", OpEq, freeform.Value{V: namedObject{"name": "Ada", "email": "ada@example.com"}}}, true},
		{"EqNil", Condition{"data.note", OpEq, freeform.Value{V: nil}}, true},
		{"NeNil", Condition{"data.note", OpNe, freeform.Value{V: nil}}, false},
		{"EqNilOnValue", Condition{"data.status", OpEq, freeform.Value{V: nil}}, false},
		{"EqGoString", Condition{"data.items.0.name", OpEq, freeform.Value{V: "seat"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Matches([]Condition{tc.c}, env); got != tc.holds {
				t.Fatalf("Matches(%+v) = %v, want %v", tc.c, got, tc.holds)
			}
		})
	}
}

// namedList and namedObject stand for named types such as bson.A and bson.M.
type (
	namedList   []any
	namedObject map[string]any
)

func TestMatchesAll(t *testing.T) {
	env := envelopeOf(t, testEnvelope)
	won := Condition{Field: "data.status", Operator: OpEq, Value: freeform.Value{V: "won"}}
	big := Condition{Field: "data.deal.value", Operator: OpGte, Value: freeform.Value{V: json.Number("10000")}}
	lost := Condition{Field: "data.status", Operator: OpEq, Value: freeform.Value{V: "lost"}}
	for _, tc := range []struct {
		name  string
		conds []Condition
		holds bool
	}{
		{"None", nil, true},
		{"Empty", []Condition{}, true},
		{"AllHold", []Condition{won, big}, true},
		{"OneFails", []Condition{won, lost, big}, false},
		{"LastFails", []Condition{won, big, lost}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Matches(tc.conds, env); got != tc.holds {
				t.Fatalf("Matches = %v, want %v", got, tc.holds)
			}
		})
	}
	if !Matches(nil, nil) {
		t.Fatal("no conditions on a nil envelope must hold")
	}
	if Matches([]Condition{won}, nil) {
		t.Fatal("eq on a nil envelope held")
	}
}

func TestMatchesManualRun(t *testing.T) {
	env := envelopeOf(t, `{"type":"manual","input":{"email":"ada@example.com","amount":"250"}}`)
	conds := []Condition{
		{Field: "type", Operator: OpEq, Value: freeform.Value{V: "manual"}},
		{Field: "input.email", Operator: OpContains, Value: freeform.Value{V: "@example.com"}},
		{Field: "input.amount", Operator: OpGt, Value: freeform.Value{V: json.Number("100")}},
		{Field: "data", Operator: OpExists, Value: freeform.Value{V: false}},
	}
	if !Matches(conds, env) {
		t.Fatal("manual run conditions do not hold")
	}
}

// TestMatchesDoesNotEvaluate checks that values looking like code or templates are compared as
// plain data.
func TestMatchesDoesNotEvaluate(t *testing.T) {
	env := envelopeOf(t, `{"data":{"expr":"1+1","tpl":"{{data.expr}}","n":2}}`)
	for _, tc := range []struct {
		name  string
		c     Condition
		holds bool
	}{
		{"ExpressionNotComputed", Condition{"data.expr", OpEq, freeform.Value{V: "1+1"}}, true},
		{"ExpressionNotEqualResult", Condition{"data.expr", OpEq, freeform.Value{V: json.Number("2")}}, false},
		{"ExpressionStringNotNumber", Condition{"data.expr", OpGt, freeform.Value{V: json.Number("1")}}, false},
		{"TemplateNotRendered", Condition{"data.tpl", OpEq, freeform.Value{V: "{{data.expr}}"}}, true},
		{"OperandTemplateNotRendered", Condition{"data.expr", OpEq, freeform.Value{V: "{{data.expr}}"}}, false},
		{"OperandExpressionNotComputed", Condition{"data.n", OpEq, freeform.Value{V: "1+1"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Matches([]Condition{tc.c}, env); got != tc.holds {
				t.Fatalf("Matches(%+v) = %v, want %v", tc.c, got, tc.holds)
			}
		})
	}
}

// FuzzMatches checks Matches never panics, whatever the envelope and condition.
func FuzzMatches(f *testing.F) {
	f.Add(testEnvelope, "data.deal.value", OpGte, `40000`)
	f.Add(testEnvelope, "data.items.0.name", OpEq, `"seat"`)
	f.Add(testEnvelope, "data.tags", OpContains, `"vip"`)
	f.Add(testEnvelope, "data.status", OpIn, `["won",1,null,{"a":[]}]`)
	f.Add(testEnvelope, "data.missing", OpExists, `false`)
	f.Add(`{"a":[[[]]],"b":"1e400"}`, "b", OpLt, `1e308`)
	f.Add(`{}`, "a.0.1", OpNe, `null`)
	f.Fuzz(func(t *testing.T, envelope, field, op, value string) {
		var env map[string]any
		if json.Unmarshal([]byte(envelope), &env) != nil {
			env = nil
		}
		var operand any
		dec := json.NewDecoder(strings.NewReader(value))
		dec.UseNumber()
		if dec.Decode(&operand) != nil {
			operand = value
		}
		c := Condition{Field: field, Operator: op, Value: freeform.Value{V: operand}}
		Matches([]Condition{c}, env)
		if _, found := Lookup(env, field); !found && op != OpExists && Matches([]Condition{c}, env) {
			t.Fatalf("condition %+v held on a missing field", c)
		}
	})
}
