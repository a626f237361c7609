-- Re-export from canonical location
return require("codecompanion.utils.queue")
