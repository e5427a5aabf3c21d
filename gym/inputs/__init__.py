"""Reading the user's files: YAML to validated models, every problem one line naming its
file and field; the JSON Schema and field reference of both file kinds."""
