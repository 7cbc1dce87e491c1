package webui

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
)

// contentTypeXML is what YARN's web services send with an XML answer.
const contentTypeXML = "application/xml;charset=utf-8"

// xmlHeader opens every XML answer, as JAXB writes it.
const xmlHeader = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>`

// xsiNamespace is the namespace of YARN's xsi:type attributes.
const xsiNamespace = "http://www.w3.org/2001/XMLSchema-instance"

// isClusterPath reports whether a path is YARN's REST API, which answers
// in JSON or XML; Loom's views and the rest answer in JSON only.
func isClusterPath(p string) bool {
	return p == "/ws/v1/cluster" || strings.HasPrefix(p, "/ws/v1/cluster/")
}

// speaksXML reports whether a route answers in XML when asked to.
func (rt route) speaksXML() bool { return isClusterPath(rt.Pattern) }

// wantsXML reads the Accept header as Jersey does for YARN's resources,
// which produce application/json first and application/xml second: each
// type takes the quality of the most specific range that covers it, the
// higher quality wins, then the more specific range, then JSON. No Accept,
// one that cannot be read, or one that takes neither type is answered in
// JSON, as before.
func wantsXML(r *http.Request) bool {
	accept := r.Header.Values("Accept")
	if len(accept) == 0 {
		return false
	}
	jq, js := acceptQuality(accept, "application", "json")
	xq, xs := acceptQuality(accept, "application", "xml")
	switch {
	case xq <= 0:
		return false
	case xq != jq:
		return xq > jq
	}
	return xs > js
}

// acceptQuality is the quality the Accept header gives typ/sub and the
// specificity of the range that gives it (3 for typ/sub, 2 for typ/*, 1
// for */*, 0 for none).
func acceptQuality(accept []string, typ, sub string) (q float64, specificity int) {
	for _, line := range accept {
		for _, rng := range strings.Split(line, ",") {
			params := strings.Split(rng, ";")
			mt := strings.ToLower(strings.TrimSpace(params[0]))
			t, s, ok := strings.Cut(mt, "/")
			if !ok {
				continue
			}
			spec := 0
			switch {
			case t == typ && s == sub:
				spec = 3
			case t == typ && s == "*":
				spec = 2
			case t == "*" && s == "*":
				spec = 1
			default:
				continue
			}
			rq := 1.0
			for _, p := range params[1:] {
				k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(strings.TrimSpace(k), "q") {
					f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
					if err != nil || math.IsNaN(f) {
						f = 0
					}
					rq = min(max(f, 0), 1)
				}
			}
			if spec > specificity {
				q, specificity = rq, spec
			}
		}
	}
	return q, specificity
}

// xmlRooted is a document that names its own root element.
type xmlRooted interface{ XMLRoot() string }

// marshalXML writes a document as YARN's XML: its root element is the
// document's only field (clusterInfo, apps, ...) or the name it gives
// itself (appstate), elements are named as the JSON fields, a list is
// its elements one after another, and an absent value is left out.
func marshalXML(v any) ([]byte, error) {
	root, body, err := xmlDocument(reflect.ValueOf(v))
	if err != nil {
		return nil, err
	}
	e := &xmlEncoder{}
	e.b.WriteString(xmlHeader)
	if err := e.element(root, body, true); err != nil {
		return nil, err
	}
	return e.b.Bytes(), nil
}

// xmlDocument finds a document's root element name and its content.
func xmlDocument(v reflect.Value) (string, reflect.Value, error) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return "", v, fmt.Errorf("no document to write")
		}
		v = v.Elem()
	}
	if r, ok := v.Interface().(xmlRooted); ok {
		return r.XMLRoot(), v, nil
	}
	if v.Kind() == reflect.Struct && v.NumField() == 1 {
		if name, _, _ := xmlField(v.Type().Field(0)); name != "" {
			return name, v.Field(0), nil
		}
	}
	return "", v, fmt.Errorf("%s has no XML root element", v.Type())
}

// xmlField reads a field's xml tag: its name, whether it is an
// attribute, whether it is left out when empty. A field without a name
// is not written.
func xmlField(f reflect.StructField) (name string, attr, omitEmpty bool) {
	if !f.IsExported() {
		return "", false, false
	}
	tag := f.Tag.Get("xml")
	if tag == "" || tag == "-" {
		return "", false, false
	}
	parts := strings.Split(tag, ",")
	for _, o := range parts[1:] {
		switch o {
		case "attr":
			attr = true
		case "omitempty":
			omitEmpty = true
		}
	}
	return parts[0], attr, omitEmpty
}

type xmlEncoder struct {
	b bytes.Buffer
	// xsi is whether an enclosing element declares the xsi prefix.
	xsi bool
}

// element writes v as the element name. A nil pointer is left out, but
// for the root, which is then empty (YARN's <apps/>).
func (e *xmlEncoder) element(name string, v reflect.Value, root bool) error {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			if root {
				e.b.WriteString("<" + name + "/>")
			}
			return nil
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := e.element(name, v.Index(i), false); err != nil {
				return err
			}
		}
		return nil
	case reflect.Struct:
		return e.structElement(name, v)
	}
	text, err := xmlText(v)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	e.b.WriteString("<" + name + ">")
	if err := xml.EscapeText(&e.b, []byte(text)); err != nil {
		return err
	}
	e.b.WriteString("</" + name + ">")
	return nil
}

func (e *xmlEncoder) structElement(name string, v reflect.Value) error {
	t := v.Type()
	e.b.WriteString("<" + name)
	declared := false
	for i := range t.NumField() {
		fname, attr, omit := xmlField(t.Field(i))
		if fname == "" || !attr || omit && v.Field(i).IsZero() {
			continue
		}
		text, err := xmlText(v.Field(i))
		if err != nil {
			return fmt.Errorf("%s.%s: %w", name, fname, err)
		}
		if fname == "type" {
			// YARN's queue and scheduler types are xsi:type.
			if !e.xsi {
				e.b.WriteString(` xmlns:xsi="` + xsiNamespace + `"`)
				e.xsi, declared = true, true
			}
			fname = "xsi:type"
		}
		e.b.WriteString(" " + fname + `="`)
		if err := xml.EscapeText(&e.b, []byte(text)); err != nil {
			return err
		}
		e.b.WriteString(`"`)
	}
	e.b.WriteString(">")
	for i := range t.NumField() {
		fname, attr, omit := xmlField(t.Field(i))
		f := v.Field(i)
		if fname == "" || attr || omit && isEmpty(f) {
			continue
		}
		if err := e.element(fname, f, false); err != nil {
			return err
		}
	}
	e.b.WriteString("</" + name + ">")
	if declared {
		e.xsi = false
	}
	return nil
}

// isEmpty is omitempty's test, as encoding/json and encoding/xml make it.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.String, reflect.Array:
		return v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	case reflect.Struct:
		return false
	}
	return v.IsZero()
}

// xmlText is a value as JAXB writes it: a float always with a decimal
// point (100.0), a bool as true or false.
func xmlText(v reflect.Value) (string, error) {
	switch v.Kind() {
	case reflect.String:
		return v.String(), nil
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10), nil
	case reflect.Float32, reflect.Float64:
		bits := 64
		if v.Kind() == reflect.Float32 {
			bits = 32
		}
		x := finite(v.Float())
		s := strconv.FormatFloat(x, 'f', -1, bits)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		return s, nil
	}
	return "", fmt.Errorf("cannot write a %s in XML", v.Type())
}
