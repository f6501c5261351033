package workflows

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// jsonValue decodes js as encoding/json does into an any.
func jsonValue(t testing.TB, js string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatalf("decode %s: %v", js, err)
	}
	return v
}

func TestRenderWholeValue(t *testing.T) {
	env := envelopeOf(t, testEnvelope)
	for _, tc := range []struct {
		name, in string
		want     any
	}{
		{"Number", "{{data.deal.value}}", 40000.0},
		{"NumberSpaces", "{{ data.deal.value }}", 40000.0},
		{"NumberOuterSpace", "  {{data.deal.value}}\n", 40000.0},
		{"NumberTabsInside", "{{\tdata.deal.value\t}}", 40000.0},
		{"Fraction", "{{data.deal.probability}}", 0.75},
		{"String", "{{bot_id}}", "b1"},
		{"NumericStringStaysString", "{{data.value_text}}", "40000"},
		{"Bool", "{{data.closed}}", true},
		{"Null", "{{data.note}}", nil},
		{"Object", "{{data.contact}}", jsonValue(t, `{"name":"Ada","email":"ada@example.com"}`)},
		{"WholeData", "{{data}}", env["data"]},
		{"Array", "{{data.tags}}", jsonValue(t, `["vip","renewal",7]`)},
		{"ArrayIndex", "{{data.items.1.name}}", "support"},
		{"NestedArrayIndex", "{{ data.matrix.1.0 }}", 3.0},
		{"UnknownPath", "{{data.missing}}", nil},
		{"UnknownTopLevel", "{{ event.data.title }}", nil},
		{"OutOfRange", "{{data.items.9.name}}", nil},
		{"InvalidPathIsLiteral", "{{data..deal}}", "{{data..deal}}"},
		{"EmptyIsLiteral", "{{}}", "{{}}"},
		{"TwoPlaceholdersAreText", "{{data.deal.value}}{{data.count}}", "4000012"},
		{"PlaceholderWithTextIsText", "{{data.deal.value}} EUR", "40000 EUR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Render(tc.in, env); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Render(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
		})
	}
}

func TestRenderEmbedded(t *testing.T) {
	env := envelopeOf(t, testEnvelope)
	env["data"].(map[string]any)["html"] = map[string]any{"b": "<b>&</b>", "a": []any{1.0, nil, true}}
	env["data"].(map[string]any)["big"] = 1e21
	env["data"].(map[string]any)["tiny"] = 0.000001
	env["data"].(map[string]any)["quote"] = `say "hi" \ {{data.status}}`
	for _, tc := range []struct{ name, in, want string }{
		{"String", "Deal {{data.deal.title}} won", "Deal VIP renewal won"},
		{"Spaces", "Deal {{  data.deal.title  }} won", "Deal VIP renewal won"},
		{"Integer", "value={{data.deal.value}}", "value=40000"},
		{"Fraction", "p={{data.deal.probability}}", "p=0.75"},
		{"NoExponent", "{{data.big}}/{{data.tiny}}", "1000000000000000000000/0.000001"},
		{"NumericString", "#{{data.fraction_text}}", "#12.5"},
		{"Bool", "closed: {{data.closed}}", "closed: true"},
		{"Null", "note=[{{data.note}}]", "note=[]"},
		{"Unknown", "x=[{{data.missing}}]", "x=[]"},
		{"UnknownThroughValue", "x=[{{data.deal.value.x}}]", "x=[]"},
		{"Object", "c={{data.contact}}", `c={"email":"ada@example.com","name":"Ada"}`},
		{"Array", "t={{data.tags}}", `t=["vip","renewal",7]`},
		{"NoHTMLEscaping", "h={{data.html}}", `h={"a":[1,null,true],"b":"<b>&</b>"}`},
		{"StringAsIs", "q={{data.quote}}", `q=say "hi" \ {{data.status}}`},
		{"ArrayIndex", "first: {{data.items.0.name}} x{{data.items.0.qty}}", "first: seat x3"},
		{"Several", "{{type}}/{{project_id}}/{{bot_id}}", "deal.won/p1/b1"},
		{"Adjacent", "{{data.status}}{{data.status}}", "wonwon"},
		{"TextKept", " \t{{data.status}}\n\u00e9\x00", " \twon\n\u00e9\x00"},
		{"InvalidUTF8Kept", "\xff{{data.status}}\xfe", "\xffwon\xfe"},
		{"TripleBraces", "{{{data.status}}}", "{won}"},
		{"InvalidPathKept", "a {{data..status}} b", "a {{data..status}} b"},
		{"LeadingDigitKept", "{{0.data}}", "{{0.data}}"},
		{"EmptyKept", "a {{}} b {{ }}", "a {{}} b {{ }}"},
		{"FilterKept", "{{ data.status | upper }}", "{{ data.status | upper }}"},
		{"ExpressionKept", "{{ 1 + 1 }} {{data.count * 2}}", "{{ 1 + 1 }} {{data.count * 2}}"},
		{"FunctionKept", `{{ printf "%d" data.count }}`, `{{ printf "%d" data.count }}`},
		{"GoTemplateKept", "{{.data.status}} {{ $x := 1 }}", "{{.data.status}} {{ $x := 1 }}"},
		{"UnclosedKept", "{{ data.status", "{{ data.status"},
		{"LoneCloseKept", "data.status }}", "data.status }}"},
		{"InnerPlaceholderOfInvalid", "{{ x {{data.status}} }}", "{{ x won }}"},
		{"SingleBracesKept", "{data.status} { {data.status} }", "{data.status} { {data.status} }"},
		{"NotRenderedTwice", "{{data.quote}}!", `say "hi" \ {{data.status}}!`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Render(tc.in, env); got != tc.want {
				t.Fatalf("Render(%q) = %#v, want %q", tc.in, got, tc.want)
			}
			if got := RenderString(tc.in, env); got != tc.want {
				t.Fatalf("RenderString(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestRenderStringWholeValueIsText(t *testing.T) {
	env := envelopeOf(t, testEnvelope)
	for _, tc := range []struct{ in, want string }{
		{"{{data.deal.value}}", "40000"},
		{" {{ data.closed }} ", " true "},
		{"{{data.missing}}", ""},
		{"{{data.note}}", ""},
		{"{{data.contact}}", `{"email":"ada@example.com","name":"Ada"}`},
		{"plain", "plain"},
		{"", ""},
	} {
		if got := RenderString(tc.in, env); got != tc.want {
			t.Errorf("RenderString(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRenderParams(t *testing.T) {
	env := envelopeOf(t, testEnvelope)
	params := map[string]any{
		"url":             "https://example.com/hooks/{{project_id}}?deal={{data.deal.title}}",
		"timeout_seconds": 10.0,
		"headers":         map[string]any{"X-Bot": "{{bot_id}}", "{{bot_id}}": "key not rendered"},
		"body": map[string]any{
			"value":   "{{data.deal.value}}",
			"deal":    "{{ data.deal }}",
			"missing": "{{data.missing}}",
			"list":    []any{"{{data.items.0.name}}", 1.5, true, nil, []any{"{{data.closed}}"}},
			"note":    "Won {{data.deal.value}} {{data.deal.currency}}",
			"raw":     json.Number("7"),
		},
	}
	before, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	got := Render(params, env)
	want := map[string]any{
		"url":             "https://example.com/hooks/p1?deal=VIP renewal",
		"timeout_seconds": 10.0,
		"headers":         map[string]any{"X-Bot": "b1", "{{bot_id}}": "key not rendered"},
		"body": map[string]any{
			"value":   40000.0,
			"deal":    jsonValue(t, `{"value":40000,"title":"VIP renewal","currency":"EUR","probability":0.75}`),
			"missing": nil,
			"list":    []any{"seat", 1.5, true, nil, []any{true}},
			"note":    "Won 40000 EUR",
			"raw":     json.Number("7"),
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Render = %#v\nwant %#v", got, want)
	}
	after, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Fatalf("Render changed its input:\n%s\n%s", before, after)
	}

	// The value of a whole placeholder is a copy: changing it leaves the envelope alone.
	deal := got.(map[string]any)["body"].(map[string]any)["deal"].(map[string]any)
	deal["value"] = 1.0
	if v, _ := Lookup(env, "data.deal.value"); v != 40000.0 {
		t.Fatalf("envelope changed through the rendered value: %v", v)
	}
}

func TestRenderScalarsAndOtherTypes(t *testing.T) {
	env := envelopeOf(t, testEnvelope)
	for _, tc := range []struct {
		name string
		in   any
		want any
	}{
		{"Nil", nil, nil},
		{"Float", 2.5, 2.5},
		{"Int", 3, 3},
		{"Bool", false, false},
		{"JSONNumber", json.Number("1e3"), json.Number("1e3")},
		{"PlainString", "no placeholders {here}", "no placeholders {here}"},
		{"EmptyString", "", ""},
		{"NilMap", map[string]any(nil), map[string]any(nil)},
		{"NilSlice", []any(nil), []any(nil)},
		{"StringSlice", []string{"{{bot_id}}", "x"}, []any{"b1", "x"}},
		{"NamedList", namedList{"{{data.count}}"}, []any{12.0}},
		{"NamedObject", namedObject{"k": "{{data.status}}"}, map[string]any{"k": "won"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Render(tc.in, env); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Render(%#v) = %#v, want %#v", tc.in, got, tc.want)
			}
		})
	}
}

func TestRenderManualRun(t *testing.T) {
	env := envelopeOf(t, `{"type":"manual","input":{"email":"ada@example.com","amount":250,"tags":["a","b"]}}`)
	got := Render(map[string]any{
		"title": "Manual: {{input.email}} ({{type}})",
		"value": "{{input.amount}}",
		"tags":  "{{input.tags}}",
		"stage": "{{data.stage}}",
	}, env)
	want := map[string]any{
		"title": "Manual: ada@example.com (manual)",
		"value": 250.0,
		"tags":  []any{"a", "b"},
		"stage": nil,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Render = %#v, want %#v", got, want)
	}
}

func TestRenderNilEnvelope(t *testing.T) {
	if got := Render("{{data.x}}", nil); got != nil {
		t.Fatalf("whole placeholder on nil envelope = %#v", got)
	}
	if got := Render("a{{data.x}}b", nil); got != "ab" {
		t.Fatalf("embedded placeholder on nil envelope = %#v", got)
	}
}

// FuzzRender checks Render never panics, leaves strings without "{{" as they are, and
// renders whole placeholders to values and other strings to text.
func FuzzRender(f *testing.F) {
	f.Add("Deal {{data.deal.title}} won", testEnvelope)
	f.Add("{{ data.deal.value }}", testEnvelope)
	f.Add("{{{data.status}}} {{}} {{ 1 + 1 }} {{data..x}}", testEnvelope)
	f.Add("{{data.items.0.name}}{{data.tags}}{{data.note}}", testEnvelope)
	f.Add("no placeholders }} here {", `{"a":1}`)
	f.Add("\xff{{a}}\xfe", `{"a":"{{a}}"}`)
	f.Add("", `null`)
	f.Fuzz(func(t *testing.T, s, envelope string) {
		var env map[string]any
		if json.Unmarshal([]byte(envelope), &env) != nil {
			env = nil
		}
		got := Render(s, env)
		text := RenderString(s, env)
		if !strings.Contains(s, "{{") {
			if got != s || text != s {
				t.Fatalf("Render(%q) = %#v, RenderString = %q; want it unchanged", s, got, text)
			}
			return
		}
		if str, ok := got.(string); ok && str != text {
			// Only a whole placeholder yielding a string may differ from RenderString, by
			// the white space around the placeholder.
			if whole := RenderString(strings.Trim(s, placeholderSpace), env); str != whole {
				t.Fatalf("Render(%q) = %q, RenderString = %q", s, str, text)
			}
		}
		Render(map[string]any{"k": []any{s, map[string]any{"n": s}}}, env)
	})
}
