module github.com/bardoinference/bardo/sdk

go 1.26
