"""The browser chat app over a `rag.service.RagService`: `ui.app.build_app(service)`.

Start it with `rag ui` or `python -m ui`. Importing this package loads nothing; `ui.app` imports Gradio.
"""
