package hdfspb

import (
	"testing"

	// The HDFS client registers Hadoop's own HDFS descriptors (package
	// hadoop.hdfs), which these are checked against.
	_ "github.com/colinmarc/hdfs/v2"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// leftOut are Hadoop's fields these messages leave out on purpose: Loom
// does not read them, and a decoder skips them as unknown.
var leftOut = map[string]bool{
	"LocatedBlocksProto.fileEncryptionInfo":  true,
	"LocatedBlocksProto.ecPolicy":            true,
	"HdfsFileStatusProto.fileEncryptionInfo": true,
	"HdfsFileStatusProto.ecPolicy":           true,
	"HdfsFileStatusProto.namespace":          true,
}

// TestMessagesMatchHadoops: every message here has Hadoop's fields, as
// the HDFS client's copy of Hadoop's .proto files declares them: the same
// numbers, names, types and cardinalities, nested types of the same
// names, enums with the same values. A field written wrong here would
// decode a NameNode's answer wrong.
func TestMessagesMatchHadoops(t *testing.T) {
	files := []protoreflect.FileDescriptor{File_hdfs_hdfs_proto, File_hdfs_ClientNamenodeProtocol_proto}
	n := 0
	for _, f := range files {
		for i := 0; i < f.Messages().Len(); i++ {
			compareMessage(t, f.Messages().Get(i))
			n++
		}
		for i := 0; i < f.Enums().Len(); i++ {
			compareEnum(t, f.Enums().Get(i))
		}
	}
	if n < 12 {
		t.Fatalf("compared %d messages", n)
	}
}

func hadoops(t *testing.T, d protoreflect.Descriptor) protoreflect.Descriptor {
	t.Helper()
	name := protoreflect.FullName("hadoop.hdfs").Append(d.Name())
	if p, ok := d.Parent().(protoreflect.MessageDescriptor); ok {
		name = hadoops(t, p).FullName().Append(d.Name())
	}
	h, err := protoregistry.GlobalFiles.FindDescriptorByName(name)
	if err != nil {
		t.Fatalf("Hadoop has no %s: %v", name, err)
	}
	return h
}

func compareMessage(t *testing.T, m protoreflect.MessageDescriptor) {
	h := hadoops(t, m).(protoreflect.MessageDescriptor)
	for i := 0; i < h.Fields().Len(); i++ {
		hf := h.Fields().Get(i)
		f := m.Fields().ByNumber(hf.Number())
		key := string(m.Name()) + "." + string(hf.Name())
		if f == nil {
			if !leftOut[key] {
				t.Errorf("%s: Hadoop's field %d %s is missing", m.FullName(), hf.Number(), hf.Name())
			}
			continue
		}
		if f.Name() != hf.Name() || f.Kind() != hf.Kind() || f.Cardinality() != hf.Cardinality() || f.IsPacked() != hf.IsPacked() {
			t.Errorf("%s field %d: %s %v %v (packed %v), Hadoop's is %s %v %v (packed %v)", m.FullName(), f.Number(),
				f.Name(), f.Cardinality(), f.Kind(), f.IsPacked(), hf.Name(), hf.Cardinality(), hf.Kind(), hf.IsPacked())
		}
		if f.HasDefault() != hf.HasDefault() || f.HasDefault() && f.Default().Interface() != hf.Default().Interface() {
			t.Errorf("%s.%s: default %v, Hadoop's %v", m.FullName(), f.Name(), f.Default(), hf.Default())
		}
		switch {
		case f.Message() != nil && f.Message().Name() != hf.Message().Name():
			t.Errorf("%s.%s is a %s, Hadoop's a %s", m.FullName(), f.Name(), f.Message().Name(), hf.Message().Name())
		case f.Enum() != nil && f.Enum().Name() != hf.Enum().Name():
			t.Errorf("%s.%s is a %s, Hadoop's a %s", m.FullName(), f.Name(), f.Enum().Name(), hf.Enum().Name())
		}
	}
	for i := 0; i < m.Fields().Len(); i++ {
		if f := m.Fields().Get(i); h.Fields().ByNumber(f.Number()) == nil {
			t.Errorf("%s field %d %s is not Hadoop's", m.FullName(), f.Number(), f.Name())
		}
	}
	for i := 0; i < m.Enums().Len(); i++ {
		compareEnum(t, m.Enums().Get(i))
	}
}

func compareEnum(t *testing.T, e protoreflect.EnumDescriptor) {
	h := hadoops(t, e).(protoreflect.EnumDescriptor)
	for i := 0; i < e.Values().Len(); i++ {
		v := e.Values().Get(i)
		if hv := h.Values().ByName(v.Name()); hv == nil || hv.Number() != v.Number() {
			t.Errorf("%s.%s = %d is not Hadoop's", e.FullName(), v.Name(), v.Number())
		}
	}
}
