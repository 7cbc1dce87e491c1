package queueconf

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// maxFileSize bounds an allocation file.
const maxFileSize = 16 << 20

// maxXMLDepth bounds element nesting: queues nest up to MaxDepth, plus the
// allocations element, fields and a little room for a good error.
const maxXMLDepth = MaxDepth + 8

// node is one XML element, as much of the DOM as the allocation file needs.
type node struct {
	name  string
	attrs []xml.Attr
	kids  []*node
	text  strings.Builder // character data directly inside the element
	line  int
}

// hasText reports non-blank character data directly inside the element.
func (n *node) hasText() bool { return strings.TrimSpace(n.text.String()) != "" }

// attr returns an attribute's value and whether it is there.
func (n *node) attr(name string) (string, bool) {
	for _, a := range n.attrs {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

// parseXML reads one XML document into a tree of nodes. Namespaces are
// ignored (Hadoop's DOM parser is not namespace-aware; only local names
// count). name is used in errors.
func parseXML(name string, data []byte) (*node, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	dec.CharsetReader = charsetReader
	var stack []*node
	var doc *node
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				msg := se.Msg
				if msg == "unexpected EOF" {
					msg = "unexpected end of file (truncated?)"
					if len(stack) > 0 {
						in := stack[len(stack)-1]
						msg = fmt.Sprintf("the file ends inside <%s> (opened at line %d): truncated?", in.name, in.line)
					}
				}
				return nil, &Error{File: name, Line: se.Line, Reason: "malformed XML: " + msg}
			}
			line, _ := dec.InputPos()
			return nil, &Error{File: name, Line: line, Reason: "malformed XML: " + err.Error()}
		}
		line, _ := dec.InputPos()
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) >= maxXMLDepth {
				return nil, &Error{File: name, Line: line, Element: t.Name.Local,
					Reason: fmt.Sprintf("elements nest deeper than %d levels", maxXMLDepth)}
			}
			n := &node{name: t.Name.Local, line: line}
			for _, a := range t.Attr {
				if a.Name.Space == "xmlns" || a.Name.Local == "xmlns" {
					continue // namespace declarations
				}
				for _, b := range n.attrs {
					if b.Name.Local == a.Name.Local {
						return nil, &Error{File: name, Line: line, Element: n.name,
							Reason: fmt.Sprintf("attribute %q is given twice", a.Name.Local)}
					}
				}
				n.attrs = append(n.attrs, xml.Attr{Name: xml.Name{Local: a.Name.Local}, Value: a.Value})
			}
			if len(stack) == 0 {
				if doc != nil {
					return nil, &Error{File: name, Line: line, Element: n.name,
						Reason: fmt.Sprintf("a second top-level element after <%s>", doc.name)}
				}
				doc = n
			} else {
				p := stack[len(stack)-1]
				p.kids = append(p.kids, n)
			}
			stack = append(stack, n)
		case xml.EndElement:
			if len(stack) == 0 { // the decoder checks nesting; be safe anyway
				return nil, &Error{File: name, Line: line, Reason: "malformed XML: unexpected end element"}
			}
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) == 0 {
				if len(bytes.TrimSpace(t)) > 0 {
					return nil, &Error{File: name, Line: line, Reason: "malformed XML: text outside the top-level element"}
				}
				continue
			}
			n := stack[len(stack)-1]
			if n.text.Len()+len(t) > 1<<20 {
				return nil, &Error{File: name, Line: line, Element: n.name, Reason: "the text is over 1 MB"}
			}
			n.text.Write(t)
		}
	}
	if len(stack) > 0 {
		return nil, &Error{File: name, Line: stack[len(stack)-1].line, Element: stack[len(stack)-1].name,
			Reason: "malformed XML: the file ends before this element is closed (truncated?)"}
	}
	if doc == nil {
		return nil, &Error{File: name, Reason: "not an allocation file: no XML element found"}
	}
	return doc, nil
}

// charsetReader lets files declared as ISO-8859-1 or US-ASCII through;
// anything else but UTF-8 is refused.
func charsetReader(label string, input io.Reader) (io.Reader, error) {
	switch strings.ToLower(label) {
	case "utf-8", "utf8":
		return input, nil
	case "iso-8859-1", "iso8859-1", "latin1", "latin-1", "us-ascii", "ascii":
		return &latin1Reader{r: bufio.NewReader(input)}, nil
	}
	return nil, fmt.Errorf("encoding %q is not supported (use UTF-8)", label)
}

// latin1Reader turns ISO-8859-1 bytes into UTF-8.
type latin1Reader struct {
	r   *bufio.Reader
	buf []byte
}

func (l *latin1Reader) Read(p []byte) (int, error) {
	for len(l.buf) == 0 {
		c, err := l.r.ReadByte()
		if err != nil {
			return 0, err
		}
		l.buf = utf8.AppendRune(l.buf, rune(c))
	}
	n := copy(p, l.buf)
	l.buf = l.buf[n:]
	return n, nil
}
