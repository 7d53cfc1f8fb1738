module github.com/bardoinference/bardo

go 1.26

require github.com/bardoinference/bardo/sdk v0.0.0

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/klauspost/compress v1.20.0 // indirect
	github.com/molecule-man/go-brrr v1.0.1 // indirect
	github.com/tetratelabs/wazero v1.12.0 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/fasthttp v1.74.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)

replace github.com/bardoinference/bardo/sdk => ./sdk
