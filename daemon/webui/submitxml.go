package webui

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"mime"
	"net/http"
	"strings"

	"github.com/loomrm/loom/daemon/webui/dao"
)

// submissionRoot is the root element of YARN's XML submission body.
const submissionRoot = "application-submission-context"

// submissionNumbers and submissionBools are the elements of a submission
// whose text is a number or true/false; every other leaf is a string.
var (
	submissionNumbers = map[string]bool{"priority": true, "max-app-attempts": true, "memory": true, "vCores": true,
		"size": true, "timestamp": true, "attempt-failures-validity-interval": true}
	submissionBools = map[string]bool{"unmanaged-AM": true, "cancel-tokens-when-complete": true,
		"keep-containers-across-application-attempts": true}
)

// maxXMLDepth bounds how deep a submission's elements nest: YARN's go
// five deep.
const maxXMLDepth = 16

// xmlElem is an element of a body read without a schema.
type xmlElem struct {
	name string
	kids []*xmlElem
	text strings.Builder
}

func (e *xmlElem) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	return e.read(d, start, 0)
}

func (e *xmlElem) read(d *xml.Decoder, start xml.StartElement, depth int) error {
	if depth > maxXMLDepth {
		return badRequest("the XML body nests deeper than %d elements", maxXMLDepth)
	}
	e.name = start.Name.Local
	for {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			k := &xmlElem{}
			if err := k.read(d, t, depth+1); err != nil {
				return err
			}
			e.kids = append(e.kids, k)
		case xml.CharData:
			e.text.Write(t)
		case xml.EndElement:
			return nil
		}
	}
}

// json writes the element's content as YARN's JSON has it: an element
// with children is an object, a name repeated is a list, a leaf is a
// string, or a number or boolean where the submission has one.
func (e *xmlElem) json(b *bytes.Buffer, numbers, bools map[string]bool) error {
	if len(e.kids) == 0 {
		text := strings.TrimSpace(e.text.String())
		switch {
		case numbers[e.name]:
			if !json.Valid([]byte(text)) || strings.ContainsAny(text, `"{[tfn`) {
				return badRequest("<%s>: expected a number, got %q", e.name, text)
			}
			b.WriteString(text)
		case bools[e.name]:
			if text != "true" && text != "false" {
				return badRequest("<%s>: expected true or false, got %q", e.name, text)
			}
			b.WriteString(text)
		default:
			s, _ := json.Marshal(text)
			b.Write(s)
		}
		return nil
	}
	var order []string
	groups := map[string][]*xmlElem{}
	for _, k := range e.kids {
		if _, ok := groups[k.name]; !ok {
			order = append(order, k.name)
		}
		groups[k.name] = append(groups[k.name], k)
	}
	b.WriteByte('{')
	for i, name := range order {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(name)
		b.Write(key)
		b.WriteByte(':')
		g := groups[name]
		if len(g) > 1 {
			b.WriteByte('[')
		}
		for j, k := range g {
			if j > 0 {
				b.WriteByte(',')
			}
			if err := k.json(b, numbers, bools); err != nil {
				return err
			}
		}
		if len(g) > 1 {
			b.WriteByte(']')
		}
	}
	b.WriteByte('}')
	return nil
}

// isXMLBody reports whether a request declares an XML body.
func isXMLBody(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && (mt == "application/xml" || strings.HasSuffix(mt, "+xml"))
}

// readSubmission reads a submission sent as JSON or, as YARN takes it
// too, as XML: the XML is read as the same document and checked the same
// way, so its errors name the same fields.
func readSubmission(c *call, sub *dao.AppSubmission) error {
	return readJSONOrXML(c, sub, submissionRoot, submissionNumbers, submissionBools)
}

// readJSONOrXML reads a JSON body into v, or an XML one whose root is
// root as the same document: its leaves named in numbers and bools are
// read as such, the others as strings.
func readJSONOrXML(c *call, v any, root string, numbers, bools map[string]bool) error {
	if !isXMLBody(c.r) {
		return readBody(c, v)
	}
	var doc xmlElem
	if err := decodeXML(http.MaxBytesReader(c.w, c.r.Body, maxBody), root, &doc); err != nil {
		return err
	}
	var b bytes.Buffer
	if len(doc.kids) == 0 {
		b.WriteString("{}")
	} else if err := doc.json(&b, numbers, bools); err != nil {
		return err
	}
	return decodeJSON(&b, v)
}
