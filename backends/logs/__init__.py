"""What a server's log says: lines split and made plain, each parsed once into a typed event, classified,
summarised, and judged (acceptance, the collapse alarm). Pure functions over text.
"""
