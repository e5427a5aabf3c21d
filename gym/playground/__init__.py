"""The playground: a design edited field by field in the browser, live (``gym serve``).
``state`` holds a page's state without web code; the Bokeh page and server draw it."""
