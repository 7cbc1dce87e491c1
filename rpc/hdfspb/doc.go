// Package hdfspb holds the Go code generated from proto/hdfs: the HDFS
// messages a client needs to ask a NameNode where files' blocks are
// (ClientNamenodeProtocol's getBlockLocations, getFileInfo, getListing
// and getServerDefaults). The generated code is committed, so that a fresh machine
// needs no protoc; regenerate it after editing proto/hdfs with
// `go generate ./rpc/hdfspb` (Debian's protobuf-compiler and
// `go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12`, as
// for the Makefile's proto target).
package hdfspb

//go:generate sh -c "cd ../.. && PATH=\"$(go env GOPATH)/bin:$PATH\" protoc -I proto --go_out=. --go_opt=module=github.com/loomrm/loom proto/hdfs/hdfs.proto proto/hdfs/ClientNamenodeProtocol.proto"
