print("liverelay")
